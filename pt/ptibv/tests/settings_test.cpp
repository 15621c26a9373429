// ptibv's parameters: defaults are valid, and each mistake is named with what was expected.
#include <catch2/catch.hpp>

#include <stdexcept>

#include "settings.hpp"

using namespace daqx;
using namespace daqx::ptibv;

namespace {

// ptibv's own settings and the shared ones it declares, read from one set of parameters as ptibv reads them.
struct AllSettings : Settings {
  pt::ConnectionSettings connection;
  pt::MessageSettings messages;
};

AllSettings with(std::initializer_list<std::pair<const char*, const char*>> values) {
  ParamSet params(parameter_specs());
  for (const auto& [name, value] : values) {
    std::string refused = params.set(name, value);
    if (!refused.empty()) throw std::invalid_argument(std::string(name) + ": " + refused);
  }
  AllSettings all;
  static_cast<Settings&>(all) = Settings::from(params);
  all.connection = pt::ConnectionSettings::from(params, 64u << 20);
  all.messages = pt::MessageSettings::from(params);
  return all;
}

}  // namespace

TEST_CASE("ptibv's defaults", "[ptibv][settings]") {
  AllSettings s = with({});
  CHECK(s.device.empty());
  CHECK(s.gid_index == -1);
  CHECK(s.mtu == 0);
  CHECK(s.connection.wait_mode == pt::WaitMode::epoll);
  CHECK(s.connection.connect_at_start);
  CHECK(s.srq == Settings::Srq::automatic);
  CHECK(s.numa == Settings::Numa::policy);
  CHECK(s.inline_threshold == 256);
  CHECK(s.connection.max_frame_size == 64u << 20);
}

TEST_CASE("ptibv's parameters are read and checked", "[ptibv][settings]") {
  AllSettings s = with({{"device", "mlx5_0"}, {"gidIndex", "3"}, {"mtu", "4096"}, {"waitMode", "busy"},
                     {"connectAt", "first-use"}, {"srq", "never"}, {"numaNode", "1"}, {"inlineThreshold", "0"}});
  CHECK(s.device == "mlx5_0");
  CHECK(s.gid_index == 3);
  CHECK(s.mtu == 4096);
  CHECK(s.connection.wait_mode == pt::WaitMode::busy);
  CHECK_FALSE(s.connection.connect_at_start);
  CHECK(s.srq == Settings::Srq::never);
  CHECK(s.numa == Settings::Numa::node);
  CHECK(s.numa_node == 1);
  CHECK(with({{"numaNode", "device"}}).numa == Settings::Numa::device);

  CHECK_THROWS_WITH(with({{"mtu", "1500"}}), Catch::Contains("parameter mtu is '1500'") && Catch::Contains("4096"));
  CHECK_THROWS_WITH(with({{"waitMode", "spin"}}), Catch::Contains("'spin' is not epoll or busy"));
  CHECK_THROWS_WITH(with({{"connectAt", "later"}}), Catch::Contains("'later' is not start or first-use"));
  CHECK_THROWS_WITH(with({{"srq", "yes"}}), Catch::Contains("'yes' is not auto or never"));
  CHECK_THROWS_WITH(with({{"numaNode", "near"}}), Catch::Contains("policy, device or a NUMA node number"));
  CHECK_THROWS_WITH(with({{"recvPoolSize", "1048576"}, {"recvBufferSize", "65536"}, {"recvDepth", "64"}}),
                    Catch::Contains("cannot hold recvDepth buffers"));
  CHECK_THROWS_WITH(with({{"gidIndex", "-2"}}), Catch::Contains("gidIndex"));
}

TEST_CASE("MTU byte counts map to the verbs enumeration and back", "[ptibv][settings]") {
  for (std::uint32_t bytes : {256u, 512u, 1024u, 2048u, 4096u}) CHECK(mtu_bytes(mtu_enum(bytes)) == bytes);
  CHECK(mtu_enum(1500) == 0);
  CHECK(mtu_bytes(0) == 0);
}
