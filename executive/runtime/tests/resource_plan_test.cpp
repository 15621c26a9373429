// The plan before start: each context's needs follow the connection plan and the declared parameters of its
// transports and applications, and a context that goes past a limit of its host is named with the resource, its
// need and the limit.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "../../../tests/support/partition_builder.hpp"
#include "daqx/executive/executive.hpp"
#include "daqx/executive/partition.hpp"
#include "daqx/executive/resource_plan.hpp"
#include "daqx/services/host_limits.hpp"

using daqx::test::PartitionBuilder;
using Catch::Contains;

namespace {

constexpr std::size_t kMiB = std::size_t{1} << 20;

std::string url(int port) { return "http://127.0.0.1:" + std::to_string(port); }

// An event builder of 3 RUs and 2 BUs and the EvM, each unit in its own context on network "data" over `protocol`,
// the endpoints' properties as given.
PartitionBuilder event_builder(const std::string& protocol, const std::string& module,
                               const std::vector<std::pair<std::string, std::string>>& endpoint_properties = {}) {
  PartitionBuilder builder("plan");
  int port = 31000;
  const auto unit = [&](const std::string& cls, std::uint32_t tid, std::uint32_t instance) {
    daqx::test::ContextBuilder context = builder.context(url(port));
    daqx::test::PropertiesBuilder endpoint = context.endpoint(protocol, "127.0.0.1", static_cast<std::uint16_t>(port + 1), "data");
    for (const auto& [name, value] : endpoint_properties) endpoint.property(name, value);
    context.module(module).module("libdaqx_evb.so");
    context.application(cls, tid, instance, "data");
    port += 10;
  };
  unit("evb::EvM", 10, 0);
  for (std::uint32_t i = 0; i < 3; ++i) unit("evb::RU", 100 + i, i);
  for (std::uint32_t j = 0; j < 2; ++j) unit("evb::BU", 200 + j, j);
  return builder;
}

std::vector<daqx::ContextNeeds> needs_of(const PartitionBuilder& builder) {
  return daqx::Executive::plan_resources(daqx::config::parse_partition(builder.xml(), "plan.xml"));
}

daqx::HostLimits roomy() {
  daqx::HostLimits limits;
  limits.host = "h";
  limits.open_files = 1 << 20;
  limits.locked_bytes = daqx::HostLimits::kUnlimited;
  limits.huge_page_bytes = 2 * kMiB;
  limits.huge_pages_free = 1 << 20;
  limits.ephemeral_low = 32768;
  limits.ephemeral_high = 60999;
  return limits;
}

std::vector<daqx::PlanShortfall> fit(const std::vector<daqx::ContextNeeds>& needs, const daqx::HostLimits& limits) {
  return daqx::check_fit(needs, [&](const std::string&) { return &limits; });
}

}  // namespace

TEST_CASE("plan before start: a pttcp context needs a descriptor per connection, its receive pool and a staging "
          "buffer per incoming connection, and locks no memory") {
  const std::vector<daqx::ContextNeeds> needs = needs_of(event_builder("tcp", "libdaqx_pttcp.so"));
  REQUIRE(needs.size() == 6);
  const daqx::ContextNeeds& evm = needs[0];
  CHECK(evm.not_counted.empty());
  // The EvM talks to all 5 units each way (connection_plan_test): 10 sockets and the executive's margin.
  CHECK(evm.outgoing == 5);
  CHECK(evm.incoming == 5);
  CHECK(evm.descriptors == 10 + 256);
  const daqx::ContextNeeds& ru = needs[1];
  CHECK(ru.descriptors == 3 + 1 + 256);
  // Receive memory: the same pool everywhere, and 256 KiB of staging for each incoming connection.
  CHECK(evm.receive_bytes - ru.receive_bytes == (5 - 1) * 256 * 1024);
  CHECK(evm.registered_bytes == 0);
  CHECK(evm.huge_page_bytes == 0);
  CHECK(evm.listening_ports == std::vector<std::uint16_t>{31000, 31001});
  // The BU declares two workers (ticker, output), the RU one: one thread more, and as many for every context's
  // executive and transport.
  CHECK(needs[4].threads == ru.threads + 1);
  CHECK(fit(needs, roomy()).empty());
}

TEST_CASE("plan before start: over ptibv every pool is registered, and the registered memory follows recvPoolSize") {
  const auto small = needs_of(event_builder("ibv", "libdaqx_ptibv.so", {{"recvPoolSize", std::to_string(64 * kMiB)}}));
  const auto large = needs_of(event_builder("ibv", "libdaqx_ptibv.so", {{"recvPoolSize", std::to_string(512 * kMiB)}}));
  REQUIRE(small.size() == 6);
  REQUIRE(small[0].not_counted.empty());
  // Registered: the EvM's own pool (13 classes up to 64 MiB: 832 MiB), the receive pool (64 MiB), the credit
  // pool (4 MiB) and the small-frame pool (8 classes, 256 B to 32 KiB, up to 16 MiB each): 1028 MiB.
  CHECK(small[0].registered_bytes == small[0].pool_bytes);
  CHECK(small[0].registered_bytes == 1028 * kMiB);
  CHECK(large[0].registered_bytes - small[0].registered_bytes == 448 * kMiB);
  CHECK(large[0].receive_bytes - small[0].receive_bytes == 448 * kMiB);
  CHECK(small[0].descriptors == 256);  // queue pairs take no descriptor
  // Locked memory below what the pools register: each context is named with both figures.
  daqx::HostLimits limits = roomy();
  limits.locked_bytes = 64 * kMiB;
  const std::vector<daqx::PlanShortfall> shortfalls = fit(small, limits);
  REQUIRE(shortfalls.size() == 6);
  CHECK(shortfalls[0].refused);
  CHECK(shortfalls[0].context == url(31000));
  CHECK(shortfalls[0].resource == "locked memory");
  CHECK_THAT(shortfalls[0].text(), Contains("needs 1028 MiB registered, host 127.0.0.1 (h) allows 64 MiB (RLIMIT_MEMLOCK)"));
}

TEST_CASE("plan before start: a context past the host's open files is refused, naming the context, its need and the "
          "limit") {
  const std::vector<daqx::ContextNeeds> needs = needs_of(event_builder("tcp", "libdaqx_pttcp.so"));
  daqx::HostLimits limits = roomy();
  limits.open_files = 265;  // the EvM needs 266, every other context less
  const std::vector<daqx::PlanShortfall> shortfalls = fit(needs, limits);
  REQUIRE(shortfalls.size() == 1);
  CHECK(shortfalls[0].refused);
  CHECK(shortfalls[0].text() ==
        "context " + url(31000) + ": open files: needs about 266 descriptors, host 127.0.0.1 (h) allows 265 (hard "
        "RLIMIT_NOFILE): raise the hard limit (ulimit -Hn, LimitNOFILE=, nofile in limits.conf) or split the context");
}

TEST_CASE("plan before start: a listening port inside the host's ephemeral port range is refused, control and "
          "endpoint ports alike") {
  const std::vector<daqx::ContextNeeds> needs = needs_of(event_builder("tcp", "libdaqx_pttcp.so"));
  daqx::HostLimits limits = roomy();
  limits.ephemeral_low = 31011;  // the first RU's endpoint port and the second RU's control port
  limits.ephemeral_high = 31020;
  const std::vector<daqx::PlanShortfall> shortfalls = fit(needs, limits);
  REQUIRE(shortfalls.size() == 2);
  CHECK(shortfalls[0].context == url(31010));
  CHECK(shortfalls[0].need == "port 31011");
  CHECK(shortfalls[1].context == url(31020));
  CHECK(shortfalls[1].need == "port 31020");
  CHECK_THAT(shortfalls[0].limit, Contains("ephemeral port range 31011-31020 (net.ipv4.ip_local_port_range)"));
  // A port the system reserves (net.ipv4.ip_local_reserved_ports) is never a source port: it may be listened on.
  limits.reserved_ports = {{31000, 31011}};
  const std::vector<daqx::PlanShortfall> reserved = fit(needs, limits);
  REQUIRE(reserved.size() == 1);
  CHECK(reserved[0].need == "port 31020");
}

TEST_CASE("plan before start: pools a policy puts on huge pages are counted per host, and too few free huge pages "
          "are a warning, not a refusal (the allocator falls back to other pages)") {
  PartitionBuilder builder = event_builder("tcp", "libdaqx_pttcp.so");
  builder.pool_rule("evb/*/pool", "hugepage");
  const std::vector<daqx::ContextNeeds> needs = needs_of(builder);
  REQUIRE(needs.size() == 6);
  CHECK(needs[0].huge_page_bytes > 0);
  CHECK(needs[0].huge_page_bytes < needs[0].pool_bytes);  // the application's pool, not the transport's
  daqx::HostLimits limits = roomy();
  limits.huge_pages_free = 1;
  const std::vector<daqx::PlanShortfall> shortfalls = fit(needs, limits);
  REQUIRE(shortfalls.size() == 1);  // one host
  CHECK_FALSE(shortfalls[0].refused);
  CHECK(shortfalls[0].resource == "huge pages");
}

TEST_CASE("plan before start: a context whose modules do not load here says what is not counted") {
  PartitionBuilder builder = event_builder("tcp", "libdaqx_pttcp.so");
  daqx::test::ContextBuilder other = builder.context(url(31100));
  other.endpoint("tcp", "127.0.0.1", 31101, "data");
  other.module("libdaqx_no_such_module.so");
  other.application("other::Sender", 900, 0, "data");
  const std::vector<daqx::ContextNeeds> needs = needs_of(builder);
  REQUIRE(needs.size() == 7);
  CHECK(needs[6].not_counted == std::vector<std::string>{"the workers of other::Sender (its module is not loaded here)"});
}

TEST_CASE("host limits: the line an executive prints with --host-limits reads back as the same limits") {
  const daqx::HostLimits here = daqx::HostLimits::here();
  CHECK(here.open_files > 0);
  std::string error;
  const std::optional<daqx::HostLimits> read = daqx::HostLimits::parse(here.text(), error);
  REQUIRE(read);
  CHECK(read->text() == here.text());
  const std::optional<daqx::HostLimits> reserved =
      daqx::HostLimits::parse(here.text() + " reservedPorts=8080,29000-29099", error);
  REQUIRE(reserved);
  CHECK(reserved->reserved_ports == std::vector<std::pair<std::uint16_t, std::uint16_t>>{{8080, 8080}, {29000, 29099}});
  CHECK_FALSE(daqx::HostLimits::parse("host=a openFiles=many", error));
  CHECK_THAT(error, Contains("'openFiles=many' is not a limit"));
}
