// Process-level tests of what only pttcp has: its two modes (latency, throughput) and an application's
// transportMode choosing between them frame by frame; its limits against peers that announce and stall
// (stallTimeout, blocks taken as bytes come) or open too many connections (maxIncoming). What every transport must do is in tests/transport/.
#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <Poco/JSON/Parser.h>

#include <chrono>
#include <optional>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "../support/executive_metrics.hpp"
#include "../support/executive_process.hpp"
#include "../support/frame_bytes.hpp"
#include "../support/partition_builder.hpp"

using namespace daqx::test;

namespace {

struct Host {
  std::uint16_t control = free_port();
  std::uint16_t data = free_port();
  std::string url() const { return "http://127.0.0.1:" + std::to_string(control); }
};

// A context with a pttcp endpoint on the data network, the pttcp and nton modules; the caller adds applications.
ContextBuilder pttcp_context(PartitionBuilder& partition, const Host& h, const PartitionProperties& endpoint_properties) {
  ContextBuilder context = partition.context(h.url());
  context.endpoint("tcp", "127.0.0.1", h.data, "data").properties(endpoint_properties);
  context.module("libdaqx_pttcp.so").module("libdaqx_nton.so");
  return context;
}

}  // namespace

TEST_CASE("N-to-N between two executives over pttcp delivers every frame once, in order, in both modes",
          "[pttcp][process]") {
  std::string mode = GENERATE(std::string("latency"), std::string("throughput"));
  std::uint32_t frame_size = GENERATE(256u, 70000u);
  INFO("mode " << mode << ", frames of " << frame_size << " B");
  Host a, b;
  // Each context has a sender and a receiver; each sender feeds both receivers: one local, one remote.
  PartitionBuilder partition("tcp-nton");
  for (const auto& [host, receiver, sender, instance] : {std::tuple{&a, 21u, 11u, 0u}, std::tuple{&b, 22u, 12u, 1u}}) {
    ContextBuilder context = pttcp_context(partition, *host, {{"mode", mode, ""}, {"reconnectMax", "300", ""}});
    context.application("nton::Receiver", receiver, instance == 0 ? std::nullopt : std::optional(instance), "data");
    context.application("nton::Sender", sender, instance, "data")
        .properties({{"frameSize", std::to_string(frame_size), ""}, {"frameCount", "6000", ""}, {"window", "128", ""}});
  }
  std::string path = write_file("tcp-nton-" + mode + std::to_string(frame_size) + ".xml", partition.xml());
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
  const PartitionProperties coalescing{{"mode", "throughput", ""}, {"packTimeout", "50000", ""}};
  const PartitionProperty mode_property{"transportMode", app_mode, ""};
  PartitionBuilder partition("tcp-override");
  pttcp_context(partition, a, coalescing).application("nton::PingPong", 2, 1, "data").properties({mode_property});
  pttcp_context(partition, b, coalescing)
      .application("nton::PingPong", 1, std::nullopt, "data")
      .properties({{"role", "ping", ""}, {"peer", "2", ""}, {"count", "20", ""}, {"warmup", "2", ""}, mode_property});
  std::string path = write_file("tcp-override-" + app_mode + ".xml", partition.xml());
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

namespace {

// Blocks of one size in use in the executive's first pool whose name contains `pool` (-1 when there is none).
double blocks_used_of_size(const ExecutiveProcess& executive, const std::string& pool, double block_size) {
  const daqx::HttpReply reply = executive.get("/api/pools");
  if (reply.status != 200) return -1;
  Poco::JSON::Parser parser;
  const auto pools = parser.parse(reply.body).extract<Poco::JSON::Array::Ptr>();
  for (std::size_t i = 0; i < pools->size(); ++i) {
    const auto entry = pools->getObject(static_cast<unsigned>(i));
    if (entry->getValue<std::string>("name").find(pool) == std::string::npos) continue;
    const auto classes = entry->getArray("classes");
    for (std::size_t k = 0; k < classes->size(); ++k) {
      const auto size_class = classes->getObject(static_cast<unsigned>(k));
      if (size_class->getValue<double>("block_size") == block_size) return size_class->getValue<double>("blocks_used");
    }
    return 0;
  }
  return -1;
}

// A plain TCP connection to a data port, for peers that misbehave.
int connect_to(std::uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in peer{};
  peer.sin_family = AF_INET;
  peer.sin_port = htons(port);
  ::inet_pton(AF_INET, "127.0.0.1", &peer.sin_addr);
  if (fd >= 0 && ::connect(fd, reinterpret_cast<const sockaddr*>(&peer), sizeof peer) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

}  // namespace

TEST_CASE("peers that announce huge frames and stall, or open connections past maxIncoming, hold little and lose "
          "only their own connections, while a real sender's frames keep flowing",
          "[pttcp][process][hostile]") {
  Host a, b;
  const PartitionProperties endpoint_properties{{"stallTimeout", "1500", ""}, {"maxIncoming", "12", ""}};
  PartitionBuilder partition("tcp-hostile");
  pttcp_context(partition, a, endpoint_properties).application("nton::Receiver", 21, std::nullopt, "data");
  pttcp_context(partition, b, endpoint_properties)
      .application("nton::Sender", 11, std::nullopt, "data")
      .properties({{"frameSize", "70000", ""}, {"frameCount", "0", ""}, {"window", "64", ""}});
  const std::string path = write_file("tcp-hostile.xml", partition.xml());
  ExecutiveProcess receiving(path, a.url()), sending(path, b.url());
  REQUIRE(receiving.wait_ready());
  REQUIRE(sending.wait_ready());
  for (auto* e : {&receiving, &sending}) REQUIRE(e->transition("configure").status == 200);
  REQUIRE(receiving.transition("enable").status == 200);
  REQUIRE(sending.transition("enable").status == 200);
  REQUIRE(receiving.wait_metric(21, "frames_received", 200));
  constexpr double kLargest = 1u << 20;  // the receive pool's largest block: what large frames are read into

  // Eight peers each announce a 60 MiB frame to the receiver and send 1000 bytes of it.
  std::vector<int> stallers;
  for (int i = 0; i < 8; ++i) {
    const int fd = connect_to(a.data);
    REQUIRE(fd >= 0);
    const auto header = frame_header_bytes(60u << 20, 21, 900 + static_cast<daqx::Tid>(i));
    std::string bytes(reinterpret_cast<const char*>(header.data()), header.size());
    bytes.append(1000, 'x');
    REQUIRE(::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(bytes.size()));
    stallers.push_back(fd);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  // What they announced is not what they hold: a block each (not 60), and the real sender goes on.
  const double frames_before = receiving.metric(21, "frames_received");
  CHECK(blocks_used_of_size(receiving, "pt/tcp/recv", kLargest) <= 8);
  CHECK(receiving.wait_metric(21, "frames_received", frames_before + 200, std::chrono::seconds(10)));
  // After stallTimeout each is closed as stalled and its block is back.
  CHECK(wait_until([&] { return transport_metric(receiving, "stalled_connections") == 8; }, std::chrono::seconds(15)));
  CHECK(wait_until([&] { return blocks_used_of_size(receiving, "pt/tcp/recv", kLargest) == 0; }));
  for (int fd : stallers) ::close(fd);

  // Twenty idle connections on top of the sender's: 11 fit under maxIncoming (12), 9 are closed at once.
  std::vector<int> idle;
  for (int i = 0; i < 20; ++i) idle.push_back(connect_to(a.data));
  CHECK(wait_until([&] { return transport_metric(receiving, "connections_over_limit") == 9; }));
  const double frames_during = receiving.metric(21, "frames_received");
  CHECK(receiving.wait_metric(21, "frames_received", frames_during + 200, std::chrono::seconds(10)));
  for (int fd : idle)
    if (fd >= 0) ::close(fd);

  CHECK(sending.transition("stop").status == 200);
  CHECK(receiving.transition("stop").status == 200);
  CHECK(receiving.metric(21, "pattern_errors") == 0);
  CHECK(receiving.metric(21, "sequence_errors") == 0);
  CHECK(transport_metric(sending, "send_errors") == 0);
  CHECK(wait_until([&] { return pool_blocks_used(receiving, "pt/tcp/recv") == 0; }));
  CHECK(receiving.stop() == 0);
  CHECK(sending.stop() == 0);
}

TEST_CASE("a peer whose host name does not resolve is said once in the log and retried, while the executive opens "
          "its control port and its other peers connect",
          "[pttcp][process]") {
  Host a, b, unnamed;
  const PartitionProperties endpoint_properties{{"reconnectMin", "50", ""}, {"reconnectMax", "100", ""}};
  PartitionBuilder partition("tcp-unresolved");
  pttcp_context(partition, a, endpoint_properties).application("nton::Receiver", 21, 0, "data");
  // Never started: its endpoint's name is what the sender cannot resolve (.invalid never resolves, RFC 2606).
  ContextBuilder nowhere = partition.context(unnamed.url());
  nowhere.endpoint("tcp", "no-such-host.invalid", unnamed.data, "data");
  nowhere.module("libdaqx_pttcp.so").module("libdaqx_nton.so");
  nowhere.application("nton::Receiver", 22, 1, "data");
  ContextBuilder sending = pttcp_context(partition, b, endpoint_properties);
  sending.application("nton::Sender", 11, 0, "data").properties({{"frameCount", "1", ""}, {"receivers", "21", ""}});
  sending.application("nton::Sender", 12, 1, "data").properties({{"frameCount", "1", ""}, {"receivers", "22", ""}});
  const std::string path = write_file("tcp-unresolved.xml", partition.xml());
  ExecutiveProcess receiver(path, a.url()), sender(path, b.url());
  REQUIRE(receiver.wait_ready());
  REQUIRE(sender.wait_ready());
  INFO(sender.output());
  const std::string warning = "cannot resolve 'no-such-host.invalid'";
  CHECK(wait_until([&] { return sender.output().find(warning) != std::string::npos; }));
  // The connect command names the peer down, after the connection was retried several times (every 100 ms).
  const auto answer = sender.post("/api/connect?timeout=1000", "{}");
  CHECK(answer.status == 504);
  CHECK(answer.body.find("no-such-host.invalid") != std::string::npos);
  CHECK(wait_until([&] { return transport_metric(receiver, "incoming_connections") == 1; }));
  const std::string output = sender.output();
  const std::size_t first = output.find(warning);
  CHECK(first != std::string::npos);
  CHECK(output.find(warning, first + warning.size()) == std::string::npos);
  CHECK(sender.stop() == 0);
  CHECK(receiver.stop() == 0);
}
