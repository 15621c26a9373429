// The shared transport parameters: declared once, read the same by every transport, each mistake named.
#include <catch2/catch.hpp>

#include "daqx/pt/connection_settings.hpp"

using namespace daqx;

namespace {

ParamSet with(std::initializer_list<std::pair<const char*, const char*>> values) {
  ParamSet params(pt::concatenate(pt::connection_parameter_specs(), pt::message_parameter_specs()));
  for (const auto& [name, value] : values) {
    const std::string refused = params.set(name, value);
    if (!refused.empty()) throw std::invalid_argument(std::string(name) + ": " + refused);
  }
  return params;
}

}  // namespace

TEST_CASE("the shared parameters' defaults are valid and mean what their help says", "[pt][settings]") {
  const ParamSet params = with({});
  const pt::ConnectionSettings c = pt::ConnectionSettings::from(params, 1u << 20);
  CHECK(c.connect_at_start);
  CHECK(c.send_queue == 4096);
  CHECK(c.reconnect_min == std::chrono::milliseconds(50));
  CHECK(c.reconnect_max == std::chrono::milliseconds(2000));
  CHECK(c.wait_mode == pt::WaitMode::epoll);
  CHECK(c.max_frame_size == 1u << 20);
  const pt::MessageSettings m = pt::MessageSettings::from(params);
  CHECK(m.receive_buffer_size == 131072);
  CHECK(m.receive_depth == 64);
  CHECK(m.send_depth == 128);
  for (const ParamSpec& spec : pt::connection_parameter_specs()) CHECK(validate_param(spec, spec.default_value).empty());
  for (const ParamSpec& spec : pt::message_parameter_specs()) CHECK(validate_param(spec, spec.default_value).empty());
}

TEST_CASE("the shared parameters are read and each mistake is named with what was expected", "[pt][settings]") {
  const pt::ConnectionSettings c = pt::ConnectionSettings::from(
      with({{"connectAt", "first-use"}, {"waitMode", "busy"}, {"reconnectMin", "500"}, {"reconnectMax", "100"}}), 0);
  CHECK_FALSE(c.connect_at_start);
  CHECK(c.wait_mode == pt::WaitMode::busy);
  CHECK(c.reconnect_max == std::chrono::milliseconds(500));  // never below the minimum
  // Words outside the declared ones are refused when set (so with the partition), before a transport reads them.
  CHECK_THROWS_WITH(with({{"waitMode", "spin"}}), Catch::Contains("waitMode: 'spin' is not epoll or busy"));
  CHECK_THROWS_WITH(with({{"connectAt", "later"}}), Catch::Contains("connectAt: 'later' is not start or first-use"));
  CHECK_THROWS_WITH(with({{"mode", "fast"}}), Catch::Contains("mode: 'fast' is not latency or throughput"));
  CHECK_THROWS_WITH(pt::MessageSettings::from(with({{"recvPoolSize", "1048576"}, {"recvBufferSize", "65536"}})),
                    Catch::Contains("cannot hold recvDepth buffers"));
  CHECK_THROWS(with({{"sendQueue", "3"}}));  // below the declared minimum
}

TEST_CASE("a choice among words says every word it expected", "[pt][settings]") {
  ParamSet params({ParamSpec{"colour", ParamType::string, "red", "", "", {}, {}}});
  CHECK(pt::choice(params, "colour", {"red", "green", "blue"}) == 0);
  params.set("colour", "blue");
  CHECK(pt::choice(params, "colour", {"red", "green", "blue"}) == 2);
  params.set("colour", "mauve");
  CHECK_THROWS_WITH(pt::choice(params, "colour", {"red", "green", "blue"}),
                    Catch::Equals("parameter colour is 'mauve': expected red, green or blue"));
}

TEST_CASE("messages of up to a quarter of a receive buffer, from 4 to 32 KiB, are copied out, into a pool whose "
          "classes reach that size and whose blocks can be split into views",
          "[pt][settings]") {
  const auto limit_for = [](const char* buffer_size) {
    return pt::small_message_limit(pt::MessageSettings::from(with({{"recvBufferSize", buffer_size}})));
  };
  CHECK(limit_for("4096") == 4096);       // a quarter would be 1 KiB: control frames still go copied
  CHECK(limit_for("65536") == 16384);
  CHECK(limit_for("131072") == 32768);    // the default
  CHECK(limit_for("1048576") == 32768);   // the ceiling: a bound on the copy of one message
  const mem::PoolConfig small = pt::small_frame_pool_config(pt::MessageSettings::from(with({})));
  REQUIRE_FALSE(small.classes.empty());
  CHECK(small.classes.back().block_size == 32768);
  CHECK(small.views > 0);
}
