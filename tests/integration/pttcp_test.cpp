// Process-level tests of what only pttcp has: its two modes (latency, throughput) and an application's
// transportMode choosing between them frame by frame. What every transport must do is in tests/transport/.
#include <catch2/catch.hpp>

#include "../support/executive_metrics.hpp"
#include "../support/executive_process.hpp"

using namespace daqx::test;

namespace {

struct Host {
  std::uint16_t control = free_port();
  std::uint16_t data = free_port();
  std::string url() const { return "http://127.0.0.1:" + std::to_string(control); }
};

std::string context_xml(const Host& h, const std::string& mode, const std::string& applications) {
  return "  <Context url=\"" + h.url() + "\">\n"
         "    <Endpoint protocol=\"tcp\" hostname=\"127.0.0.1\" port=\"" + std::to_string(h.data) +
         "\" network=\"data\"><Properties><mode>" + mode + "</mode><reconnectMax>300</reconnectMax></Properties></Endpoint>\n"
         "    <Module path=\"libdaqx_pttcp.so\"/>\n    <Module path=\"libdaqx_nton.so\"/>\n" + applications +
         "  </Context>\n";
}

std::string partition(const std::string& name, const std::vector<std::string>& contexts) {
  std::string xml = "<Partition name=\"" + name + "\">\n";
  for (const auto& c : contexts) xml += c;
  return xml + "</Partition>\n";
}

}  // namespace

TEST_CASE("N-to-N between two executives over pttcp delivers every frame once, in order, in both modes",
          "[pttcp][process]") {
  std::string mode = GENERATE(std::string("latency"), std::string("throughput"));
  std::uint32_t frame_size = GENERATE(256u, 70000u);
  INFO("mode " << mode << ", frames of " << frame_size << " B");
  Host a, b;
  auto sender = [&](int id, int instance) {
    return "    <Application class=\"nton::Sender\" id=\"" + std::to_string(id) + "\" instance=\"" +
           std::to_string(instance) + "\" network=\"data\"><Properties><frameSize>" + std::to_string(frame_size) +
           "</frameSize><frameCount>6000</frameCount><window>128</window></Properties></Application>\n";
  };
  // Each context has a sender and a receiver; each sender feeds both receivers: one local, one remote.
  std::string path = write_file("tcp-nton-" + mode + std::to_string(frame_size) + ".xml", partition("tcp-nton", {
      context_xml(a, mode, "    <Application class=\"nton::Receiver\" id=\"21\" network=\"data\"/>\n" + sender(11, 0)),
      context_xml(b, mode, "    <Application class=\"nton::Receiver\" id=\"22\" instance=\"1\" network=\"data\"/>\n" + sender(12, 1))}));
  ExecutiveProcess first(path, a.url()), second(path, b.url());
  REQUIRE(first.wait_ready());
  REQUIRE(second.wait_ready());
  for (auto* e : {&first, &second}) REQUIRE(e->transition("configure").status == 200);
  // Receivers of both contexts first: a sender's frames must not reach a receiver that is not enabled.
  REQUIRE(first.transition(21, "enable").status == 200);
  REQUIRE(second.transition(22, "enable").status == 200);
  REQUIRE(first.transition(11, "enable").status == 200);
  REQUIRE(second.transition(12, "enable").status == 200);
  REQUIRE(first.wait_metric(21, "frames_received", 6000, std::chrono::seconds(60)));
  REQUIRE(second.wait_metric(22, "frames_received", 6000, std::chrono::seconds(60)));
  REQUIRE(first.wait_metric(11, "done", 1));
  REQUIRE(second.wait_metric(12, "done", 1));
  INFO(first.output() << second.output());
  for (auto [e, receiver] : {std::pair{&first, 21u}, std::pair{&second, 22u}}) {
    CHECK(e->metric(receiver, "frames_received") == 6000);
    CHECK(e->metric(receiver, "bytes_received") == 6000.0 * frame_size);
    CHECK(e->metric(receiver, "pattern_errors") == 0);
    CHECK(e->metric(receiver, "sequence_errors") == 0);
  }
  CHECK(transport_metric(first, "frames_received") >= 3000);  // half of 22's frames crossed to 21... and back
  CHECK(transport_metric(first, "send_errors") == 0);
  for (auto* e : {&second, &first}) CHECK(e->transition("stop").status == 200);
  CHECK(wait_until([&] {
    return pool_blocks_used(first, "pt/tcp/recv") == 0 && pool_blocks_used(second, "pt/tcp/recv") == 0;
  }));
  CHECK(first.stop() == 0);
  CHECK(second.stop() == 0);
}

TEST_CASE("an application's transportMode overrides its endpoint's mode, frame by frame", "[pttcp][process]") {
  // The endpoints coalesce with a 50 ms pack timeout: a ping sent that way waits for it (a lower bound,
  // not a timing guess). With transportMode=latency the same applications' frames leave at once.
  std::string app_mode = GENERATE(std::string("endpoint"), std::string("latency"));
  INFO("transportMode " << app_mode);
  Host a, b;
  auto endpoint = [](const Host& h, const std::string& apps) {
    return "  <Context url=\"" + h.url() + "\">\n    <Endpoint protocol=\"tcp\" hostname=\"127.0.0.1\" port=\"" +
           std::to_string(h.data) + "\" network=\"data\"><Properties><mode>throughput</mode><packTimeout>50000</packTimeout>"
           "</Properties></Endpoint>\n    <Module path=\"libdaqx_pttcp.so\"/>\n    <Module path=\"libdaqx_nton.so\"/>\n" + apps +
           "  </Context>\n";
  };
  std::string mode_property = "<transportMode>" + app_mode + "</transportMode>";
  std::string path = write_file("tcp-override-" + app_mode + ".xml", partition("tcp-override", {
      endpoint(a, "    <Application class=\"nton::PingPong\" id=\"2\" instance=\"1\" network=\"data\"><Properties>" +
                  mode_property + "</Properties></Application>\n"),
      endpoint(b, "    <Application class=\"nton::PingPong\" id=\"1\" network=\"data\"><Properties><role>ping</role>"
                  "<peer>2</peer><count>20</count><warmup>2</warmup>" + mode_property + "</Properties></Application>\n")}));
  ExecutiveProcess pong(path, a.url()), ping(path, b.url());
  REQUIRE(pong.wait_ready());
  REQUIRE(ping.wait_ready());
  for (auto* e : {&pong, &ping}) REQUIRE(e->transition("configure").status == 200);
  for (auto* e : {&pong, &ping}) REQUIRE(e->transition("enable").status == 200);
  REQUIRE(ping.wait_metric(1, "done", 1, std::chrono::seconds(60)));
  double median = ping.metric(1, "rtt_median_us");
  if (app_mode == "endpoint") {
    CHECK(median >= 50000);  // held for the pack timeout on the way out (and again on the way back)
  } else {
    CHECK(median < 25000);   // sent at once: far below one pack timeout
  }
  CHECK(ping.stop() == 0);
  CHECK(pong.stop() == 0);
}
