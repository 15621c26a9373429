// Process-level tests of pttcp: executives in separate processes on loopback move verified data in both
// modes, survive bad peers without losing a block, and reconnect after a peer restarts.
#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <Poco/JSON/Parser.h>

#include <array>
#include <cmath>
#include <cstring>
#include <thread>

#include "../support/executive_process.hpp"
#include "daqx/executive/frame.hpp"

using namespace daqx::test;
using Catch::Contains;

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

// Blocks in use in a named pool of an executive (-1 when not found).
double pool_used(const ExecutiveProcess& e, const std::string& name) {
  daqx::HttpReply reply = e.get("/api/pools");
  if (reply.status != 200) return -1;
  auto pools = Poco::JSON::Parser().parse(reply.body).extract<Poco::JSON::Array::Ptr>();
  for (std::size_t i = 0; i < pools->size(); ++i) {
    auto pool = pools->getObject(static_cast<unsigned>(i));
    if (pool->getValue<std::string>("name") != name) continue;
    double used = 0;
    auto classes = pool->getArray("classes");
    for (std::size_t c = 0; c < classes->size(); ++c)
      used += classes->getObject(static_cast<unsigned>(c))->getValue<double>("blocks_used");
    return used;
  }
  return -1;
}

double transport_metric(const ExecutiveProcess& e, const std::string& name) {
  daqx::HttpReply reply = e.get("/api/transports");
  if (reply.status != 200) return std::nan("");
  auto transports = Poco::JSON::Parser().parse(reply.body).extract<Poco::JSON::Array::Ptr>();
  for (std::size_t t = 0; t < transports->size(); ++t) {
    auto metrics = transports->getObject(static_cast<unsigned>(t))->getArray("metrics");
    for (std::size_t i = 0; metrics && i < metrics->size(); ++i) {
      auto m = metrics->getObject(static_cast<unsigned>(i));
      if (m->getValue<std::string>("name") == name) return m->getValue<double>("value");
    }
  }
  return std::nan("");
}

bool wait_until(const std::function<bool()>& condition, std::chrono::seconds limit = std::chrono::seconds(20)) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (condition()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return condition();
}

int raw_connect(std::uint16_t port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(port);
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

void send_all(int fd, const void* data, std::size_t bytes) {
  const char* at = static_cast<const char*>(data);
  while (bytes > 0) {
    ssize_t n = send(fd, at, bytes, MSG_NOSIGNAL);
    if (n <= 0) return;
    at += n;
    bytes -= static_cast<std::size_t>(n);
  }
}

std::array<std::byte, daqx::kFrameHeaderSize> header(std::uint32_t total, daqx::Tid target) {
  daqx::FrameHeader h;
  h.total_length = total;
  h.target = target;
  h.initiator = 999;
  h.function = 0x20;
  std::array<std::byte, daqx::kFrameHeaderSize> bytes{};
  daqx::encode_header(h, bytes.data());
  return bytes;
}

}  // namespace

TEST_CASE("ping-pong between two executives over pttcp measures round trips", "[pttcp][process]") {
  Host a, b;
  std::string path = write_file("tcp-pingpong.xml", partition("tcp-pingpong", {
      context_xml(a, "latency", "    <Application class=\"nton::PingPong\" id=\"2\" instance=\"1\" network=\"data\"/>\n"),
      context_xml(b, "latency", "    <Application class=\"nton::PingPong\" id=\"1\" network=\"data\"><Properties><role>ping</role>"
                                "<peer>2</peer><count>3000</count><frameSize>256</frameSize></Properties></Application>\n")}));
  ExecutiveProcess pong(path, a.url()), ping(path, b.url());
  REQUIRE(pong.wait_ready());
  REQUIRE(ping.wait_ready());
  for (auto* e : {&pong, &ping}) REQUIRE(e->transition("configure").status == 200);
  for (auto* e : {&pong, &ping}) REQUIRE(e->transition("enable").status == 200);
  REQUIRE(ping.wait_metric(1, "done", 1));
  INFO(ping.output() << pong.output());
  CHECK(ping.metric(1, "samples") == 3000);
  CHECK(ping.metric(1, "rtt_median_us") > 0);
  CHECK(ping.metric(1, "rtt_p99_us") >= ping.metric(1, "rtt_median_us"));
  CHECK(ping.stop() == 0);
  CHECK(pong.stop() == 0);
}

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
  CHECK(wait_until([&] { return pool_used(first, "pt/tcp/recv") == 0 && pool_used(second, "pt/tcp/recv") == 0; }));
  CHECK(first.stop() == 0);
  CHECK(second.stop() == 0);
}

TEST_CASE("frames larger than the largest block cross pttcp as chains", "[pttcp][process]") {
  Host a, b;
  std::string path = write_file("tcp-large.xml", partition("tcp-large", {
      context_xml(a, "throughput", "    <Application class=\"nton::Receiver\" id=\"21\" network=\"data\"/>\n"),
      context_xml(b, "throughput", "    <Application class=\"nton::Sender\" id=\"11\" network=\"data\"><Properties>"
                                   "<frameSize>3145728</frameSize><frameCount>40</frameCount><window>8</window><ackEvery>4</ackEvery>"
                                   "<receivers>21</receivers></Properties></Application>\n")}));
  ExecutiveProcess receiver(path, a.url()), sender(path, b.url());
  REQUIRE(receiver.wait_ready());
  REQUIRE(sender.wait_ready());
  for (auto* e : {&receiver, &sender}) REQUIRE(e->transition("configure").status == 200);
  for (auto* e : {&receiver, &sender}) REQUIRE(e->transition("enable").status == 200);
  REQUIRE(receiver.wait_metric(21, "frames_received", 40, std::chrono::seconds(60)));
  CHECK(receiver.metric(21, "bytes_received") == 40.0 * 3145728);
  CHECK(receiver.metric(21, "pattern_errors") == 0);
  CHECK(sender.stop() == 0);
  CHECK(receiver.stop() == 0);
}

TEST_CASE("bad peers lose only their own connection: the executive stays up, frees every block and serves others",
          "[pttcp][process][faults]") {
  Host a, b;
  std::string path = write_file("tcp-bad-peers.xml", partition("tcp-bad", {
      context_xml(a, "latency", "    <Application class=\"nton::Receiver\" id=\"21\" network=\"data\"/>\n"),
      context_xml(b, "latency", "    <Application class=\"nton::Sender\" id=\"11\" network=\"data\"><Properties>"
                                "<frameSize>4096</frameSize><receivers>21</receivers></Properties></Application>\n")}));
  ExecutiveProcess receiver(path, a.url()), sender(path, b.url());
  REQUIRE(receiver.wait_ready());
  REQUIRE(sender.wait_ready());
  double recv_blocks_at_start = pool_used(receiver, "pt/tcp/recv");
  CHECK(recv_blocks_at_start == 0);
  for (auto* e : {&receiver, &sender}) REQUIRE(e->transition("configure").status == 200);
  for (auto* e : {&receiver, &sender}) REQUIRE(e->transition("enable").status == 200);
  REQUIRE(receiver.wait_metric(21, "frames_received", 1000));

  // 1. garbage
  int fd = raw_connect(a.data);
  REQUIRE(fd >= 0);
  send_all(fd, "GET / HTTP/1.0\r\n\r\nthis is not a daqx frame at all......", 56);
  // 2. a frame cut short, then the peer goes away
  int cut = raw_connect(a.data);
  auto big = header(100000, 21);
  send_all(cut, big.data(), big.size());
  std::vector<char> part(50000, 'x');
  send_all(cut, part.data(), part.size());
  // 3. a length field far beyond the maximum frame size
  int huge = raw_connect(a.data);
  auto h = header(0xfffffff0u, 21);
  send_all(huge, h.data(), h.size());
  // 4. a well-formed frame for an application that is not there
  int stray = raw_connect(a.data);
  auto s = header(64, 4242);
  std::vector<std::byte> stray_frame(s.begin(), s.end());
  stray_frame.resize(64);
  send_all(stray, stray_frame.data(), stray_frame.size());
  // 5. an abrupt reset in the middle of a frame (SO_LINGER 0 makes close() send RST)
  int reset = raw_connect(a.data);
  send_all(reset, big.data(), big.size());
  send_all(reset, part.data(), 1000);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  close(cut);
  linger hard{1, 0};
  setsockopt(reset, SOL_SOCKET, SO_LINGER, &hard, sizeof hard);
  close(reset);

  CHECK(wait_until([&] {
    return transport_metric(receiver, "bad_streams") >= 3 && transport_metric(receiver, "truncated_frames") >= 2;
  }));
  INFO(receiver.output());
  CHECK(transport_metric(receiver, "bad_streams") == 3);       // garbage, huge length, unknown target
  CHECK(transport_metric(receiver, "truncated_frames") == 2);  // cut short, reset
  CHECK_THAT(receiver.output(), Contains("bad magic") && Contains("above the maximum frame size") &&
                                    Contains("not here") && Contains("middle of a frame"));
  close(fd);
  close(huge);
  close(stray);

  // The honest sender was never disturbed.
  double before = receiver.metric(21, "frames_received");
  CHECK(receiver.wait_metric(21, "frames_received", before + 1000));
  CHECK(receiver.metric(21, "pattern_errors") == 0);
  CHECK(receiver.metric(21, "sequence_errors") == 0);
  CHECK(sender.metric(11, "send_errors") == 0);

  // Stop, and every receive block is back.
  CHECK(sender.transition("stop").status == 200);
  CHECK(receiver.transition("stop").status == 200);
  CHECK(wait_until([&] { return pool_used(receiver, "pt/tcp/recv") == 0; }));
  CHECK(pool_used(receiver, "nton/receiver/0/pool") == 0);
  CHECK(receiver.stop() == 0);
  CHECK(sender.stop() == 0);
}

TEST_CASE("a peer killed mid-run frees its buffers on the survivor, and the connection comes back when it restarts",
          "[pttcp][process][faults]") {
  Host a, b;
  std::string path = write_file("tcp-restart.xml", partition("tcp-restart", {
      context_xml(a, "throughput", "    <Application class=\"nton::Receiver\" id=\"21\" network=\"data\"/>\n"),
      context_xml(b, "throughput", "    <Application class=\"nton::Sender\" id=\"11\" network=\"data\"><Properties>"
                                   "<frameSize>65536</frameSize><receivers>21</receivers></Properties></Application>\n")}));
  auto receiver = std::make_unique<ExecutiveProcess>(path, a.url());
  ExecutiveProcess sender(path, b.url());
  REQUIRE(receiver->wait_ready());
  REQUIRE(sender.wait_ready());
  for (auto* e : {receiver.get(), &sender}) REQUIRE(e->transition("configure").status == 200);
  for (auto* e : {receiver.get(), &sender}) REQUIRE(e->transition("enable").status == 200);
  REQUIRE(receiver->wait_metric(21, "frames_received", 2000));

  SECTION("the sender dies: the receiver frees what it held and stays up") {
    sender.kill_now();
    CHECK(wait_until([&] {
      return transport_metric(*receiver, "connections_closed_by_peer") + transport_metric(*receiver, "truncated_frames") >= 1;
    }));
    CHECK(receiver->transition("stop").status == 200);
    CHECK(wait_until([&] { return pool_used(*receiver, "pt/tcp/recv") == 0; }));
    CHECK(receiver->get("/api/executive").status == 200);
    CHECK(receiver->stop() == 0);
  }
  SECTION("the receiver dies and restarts: the sender reconnects") {
    receiver->kill_now();
    CHECK(wait_until([&] { return transport_metric(sender, "send_errors") > 0; }));
    CHECK(sender.get("/api/executive").status == 200);
    receiver = std::make_unique<ExecutiveProcess>(path, a.url());
    REQUIRE(receiver->wait_ready());
    CHECK(wait_until([&] { return transport_metric(sender, "reconnects") >= 1; }));
    CHECK(sender.transition("stop").status == 200);
    REQUIRE(receiver->transition("configure").status == 200);
    REQUIRE(receiver->transition("enable").status == 200);
    REQUIRE(sender.transition("enable").status == 200);
    CHECK(receiver->wait_metric(21, "frames_received", 1000));
    CHECK(receiver->metric(21, "pattern_errors") == 0);
    CHECK(sender.stop() == 0);
    CHECK(receiver->stop() == 0);
  }
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
