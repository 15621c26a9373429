// N-to-N 2x2 over pttcp with every executive on its own simulated host (network namespace): frames cross
// real network stacks with their own addresses. Skipped (exit code 77) where namespaces are unavailable.
#include <catch2/catch.hpp>

#include <optional>
#include <tuple>

#include "../support/executive_process.hpp"
#include "../support/netns.hpp"
#include "../support/partition_builder.hpp"

using namespace daqx::test;
using namespace std::chrono_literals;

TEST_CASE("N-to-N 2x2 over pttcp, one executive per simulated host, delivers every frame with its pattern",
          "[netns][pttcp]") {
  skip_test_unless_netns_available();
  VirtualCluster cluster(4);  // hosts 0,1: senders; 2,3: receivers
  const std::uint16_t control = 39400, data = 39401;  // each namespace has all its ports free
  std::string mode = GENERATE(std::string("latency"), std::string("throughput"));
  INFO("mode " << mode);
  PartitionBuilder partition("cluster-2x2");
  auto context = [&](int host) {
    ContextBuilder made = partition.context(cluster.url(host, control));
    made.endpoint("tcp", cluster.address(host), data, "data").property("mode", mode);
    made.module("libdaqx_pttcp.so").module("libdaqx_nton.so");
    return made;
  };
  for (auto [host, id, instance] : {std::tuple{0, 11u, 0u}, std::tuple{1, 12u, 1u}})
    context(host).application("nton::Sender", id, instance, "data").properties(
        {{"frameSize", "32768", ""}, {"frameCount", "8000", ""}, {"window", "64", ""}});
  context(2).application("nton::Receiver", 21, std::nullopt, "data");
  context(3).application("nton::Receiver", 22, 1, "data");
  const std::string xml = partition.xml();
  std::string path = write_file("cluster-2x2-" + mode + ".xml", xml);
  std::vector<std::unique_ptr<ExecutiveProcess>> executives;
  for (int host = 0; host < 4; ++host) executives.push_back(cluster.start_executive(host, path, control));
  for (auto& e : executives) REQUIRE(e->wait_ready());
  for (auto& e : executives) REQUIRE(e->transition("configure").status == 200);
  for (int host : {2, 3, 0, 1}) REQUIRE(executives[host]->transition("enable").status == 200);  // receivers first

  for (auto [host, tid] : {std::pair{2, 21u}, std::pair{3, 22u}})
    REQUIRE(executives[host]->wait_metric(tid, "frames_received", 8000, 90s));
  for (auto [host, tid] : {std::pair{0, 11u}, std::pair{1, 12u}}) REQUIRE(executives[host]->wait_metric(tid, "done", 1, 30s));
  for (auto [host, tid] : {std::pair{2, 21u}, std::pair{3, 22u}}) {
    INFO(executives[host]->output());
    CHECK(executives[host]->metric(tid, "frames_received") == 8000);  // 4000 from each sender
    CHECK(executives[host]->metric(tid, "bytes_received") == 8000.0 * 32768);
    CHECK(executives[host]->metric(tid, "senders") == 2);
    CHECK(executives[host]->metric(tid, "pattern_errors") == 0);
    CHECK(executives[host]->metric(tid, "sequence_errors") == 0);
  }
  for (auto& e : executives) CHECK(e->transition("stop").status == 200);
  for (auto& e : executives) CHECK(e->stop() == 0);
}
