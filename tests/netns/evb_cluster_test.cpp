// The event builder 4x4 on a simulated cluster: the EvM, four RUs and four BUs each in its own network
// namespace (its own host address), the partition made by the generator users run, a thousand events or more
// built on every BU with every event's integrity checked (the soak runs the same partition for long). Skipped (exit code 77) where namespaces are unavailable.
#include <catch2/catch.hpp>

#include <thread>

#include "../support/checked_evb_partition.hpp"
#include "../support/executive_process.hpp"
#include "../support/netns.hpp"
#include "../support/process.hpp"

using namespace daqx::test;
using namespace std::chrono_literals;

TEST_CASE("4x4 event builder, one unit per simulated host, builds on every BU with every event verified",
          "[netns][evb]") {
  skip_test_unless_netns_available();
  constexpr int kRus = 4, kBus = 4, kHosts = 1 + kRus + kBus;
  VirtualCluster cluster(kHosts);  // the generator places the EvM on host 0, RUs on 1..4, BUs on 5..8
  const std::uint16_t control = 39400;
  std::string path;
  REQUIRE_NOTHROW(path = checked_evb_partition(cluster, kRus, kBus, control, "evb-4x4-cluster"));

  std::vector<std::unique_ptr<ExecutiveProcess>> executives;
  for (int h = 0; h < kHosts; ++h) executives.push_back(cluster.start_executive(h, path, control));
  for (auto& e : executives) REQUIRE(e->wait_ready());
  // Partition order puts the EvM last: enable BUs and RUs first, the EvM (host 0) after them.
  const std::vector<int> order{5, 6, 7, 8, 1, 2, 3, 4, 0};
  for (int h : order) REQUIRE(executives[h]->transition("configure").status == 200);
  for (int h : order) REQUIRE(executives[h]->transition("enable").status == 200);
  auto evm = [&]() -> ExecutiveProcess& { return *executives[0]; };
  constexpr std::uint32_t kEvm = 10;
  REQUIRE(evm().wait_metric(kEvm, "events_completed", 1, 30s));
  const auto started = std::chrono::steady_clock::now();
  // Progress, not time: every BU has built a thousand events (a few seconds here; the bound is for a busy machine).
  for (int b = 0; b < kBus; ++b)
    CHECK(executives[1 + kRus + b]->wait_metric(200 + static_cast<std::uint32_t>(b), "events_built", 1000, 60s));
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  for (auto it = order.rbegin(); it != order.rend(); ++it) CHECK(executives[*it]->transition("stop").status == 200);

  const double assigned = evm().metric(kEvm, "events_assigned");
  INFO("assigned " << assigned << " in " << seconds << " s");
  CHECK(assigned > 1000);
  CHECK(evm().metric(kEvm, "events_completed") == assigned);
  CHECK(evm().metric(kEvm, "events_lost") == 0);
  CHECK(evm().metric(kEvm, "unexpected_discards") == 0);
  double built = 0;
  for (int b = 0; b < kBus; ++b) {
    const std::uint32_t tid = 200 + static_cast<std::uint32_t>(b);
    ExecutiveProcess& e = *executives[1 + kRus + b];
    INFO("BU " << tid);
    CHECK(e.metric(tid, "events_built") > 0);
    CHECK(e.metric(tid, "events_corrupt") == 0);
    CHECK(e.metric(tid, "events_incomplete") == 0);
    CHECK(e.metric(tid, "duplicate_pieces") == 0);
    CHECK(e.metric(tid, "protocol_errors") == 0);
    CHECK(e.metric(tid, "fragments_received") == e.metric(tid, "events_built") * (1 + kRus));
    built += e.metric(tid, "events_built");
  }
  CHECK(built == assigned);
  for (int r = 0; r < kRus; ++r) {
    const std::uint32_t tid = 100 + static_cast<std::uint32_t>(r);
    CHECK(executives[1 + r]->metric(tid, "fragments_sent") == assigned);
  }
  for (auto& e : executives) CHECK(e->stop() == 0);
}
