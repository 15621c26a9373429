// N-to-N 2x2 over pttcp with every executive on its own simulated host (network namespace): frames cross
// real network stacks with their own addresses. Skipped (exit code 77) where namespaces are unavailable.
#include <catch2/catch.hpp>

#include "../support/executive_process.hpp"
#include "../support/netns.hpp"

using namespace daqx::test;
using namespace std::chrono_literals;

TEST_CASE("N-to-N 2x2 over pttcp, one executive per simulated host, delivers every frame with its pattern",
          "[netns][pttcp]") {
  skip_test_unless_netns_available();
  VirtualCluster cluster(4);  // hosts 0,1: senders; 2,3: receivers
  const std::uint16_t control = 39400, data = 39401;  // each namespace has all its ports free
  std::string mode = GENERATE(std::string("latency"), std::string("throughput"));
  INFO("mode " << mode);
  auto context = [&](int host, const std::string& application) {
    return "  <Context url=\"" + cluster.url(host, control) + "\">\n    <Endpoint protocol=\"tcp\" hostname=\"" +
           cluster.address(host) + "\" port=\"" + std::to_string(data) + "\" network=\"data\"><Properties><mode>" + mode +
           "</mode></Properties></Endpoint>\n    <Module path=\"libdaqx_pttcp.so\"/>\n    <Module path=\"libdaqx_nton.so\"/>\n" +
           application + "  </Context>\n";
  };
  auto sender = [](int id, int instance) {
    return "    <Application class=\"nton::Sender\" id=\"" + std::to_string(id) + "\" instance=\"" + std::to_string(instance) +
           "\" network=\"data\"><Properties><frameSize>32768</frameSize><frameCount>8000</frameCount>"
           "<window>64</window></Properties></Application>\n";
  };
  std::string xml = "<Partition name=\"cluster-2x2\">\n" + context(0, sender(11, 0)) + context(1, sender(12, 1)) +
                    context(2, "    <Application class=\"nton::Receiver\" id=\"21\" network=\"data\"/>\n") +
                    context(3, "    <Application class=\"nton::Receiver\" id=\"22\" instance=\"1\" network=\"data\"/>\n") +
                    "</Partition>\n";
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
