// Transport suite, faults: bad peers of each kind the transport can meet lose only their own connection, and a
// peer killed mid-run frees its buffers on the survivor and is reconnected when it restarts.
#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <cmath>
#include <cstring>
#include <memory>
#include <thread>

#include "../support/frame_bytes.hpp"
#include "../support/process.hpp"
#include "daqx/api/frame.hpp"
#include "suite.hpp"

using namespace daqx::test;
using Catch::Contains;

namespace {

constexpr std::uint32_t kReceiver = 21;
constexpr std::uint32_t kSender = 11;

// A receiver fed by an honest sender over the transport, for bad peers to try to disturb. Its receive pool is
// measured at rest once the honest connection is open and before any frame moves.
class HonestTraffic {
 public:
  HonestTraffic(const TransportProfile& transport, const std::string& name) : transport_(transport) {
    PartitionBuilder partition(name);
    add_nton_context(partition, transport, receiver_host_, Traffic::latency)
        .context.application("nton::Receiver", kReceiver, 0, "data");
    add_nton_context(partition, transport, sender_host_, Traffic::latency)
        .context.application("nton::Sender", kSender, 0, "data")
        .properties({{"frameSize", "4096", ""}, {"receivers", "21", ""}});
    const std::string path = write_file(name + ".xml", partition.xml());
    receiver_ = std::make_unique<ExecutiveProcess>(path, receiver_host_.url());
    sender_ = std::make_unique<ExecutiveProcess>(path, sender_host_.url());
    REQUIRE(receiver_->wait_ready());
    REQUIRE(sender_->wait_ready());
    for (auto* e : {receiver_.get(), sender_.get()}) REQUIRE(e->transition("configure").status == 200);
    REQUIRE(wait_until([&] { return transport_metric(*receiver_, "incoming_connections") >= 1; }));
    receive_blocks_before_ = pool_blocks_used(*receiver_, transport.receive_pool);
    CHECK(receive_blocks_before_ == receive_blocks_at_rest(*receiver_, transport));
    for (auto* e : {receiver_.get(), sender_.get()}) REQUIRE(e->transition("enable").status == 200);
    REQUIRE(receiver_->wait_metric(kReceiver, "frames_received", 1000));
  }

  ExecutiveProcess& receiver() { return *receiver_; }
  std::uint16_t receiver_port() const { return receiver_host_.data; }

  // The honest sender was never disturbed; once both stop, the receive pool is back where it was at rest.
  void check_undisturbed_and_drained() {
    INFO(receiver_->output());
    CHECK(receiver_->get("/api/executive").status == 200);
    const double before = receiver_->metric(kReceiver, "frames_received");
    CHECK(receiver_->wait_metric(kReceiver, "frames_received", before + 1000));
    CHECK(receiver_->metric(kReceiver, "pattern_errors") == 0);
    CHECK(receiver_->metric(kReceiver, "sequence_errors") == 0);
    CHECK(sender_->metric(kSender, "send_errors") == 0);
    CHECK(sender_->transition("stop").status == 200);
    CHECK(receiver_->transition("stop").status == 200);
    CHECK(wait_until([&] { return pool_blocks_used(*receiver_, transport_.receive_pool) == receive_blocks_before_; }));
    // The receiver's own blocks are its acknowledgements: those posted just before the stop go back when the
    // transport has them sent, which on a busy machine can be a moment after the stop returned.
    CHECK(wait_until([&] { return pool_blocks_used(*receiver_, "nton/receiver/0/pool") == 0; }));
    CHECK(receiver_->stop() == 0);
    CHECK(sender_->stop() == 0);
  }

 private:
  const TransportProfile& transport_;
  Host receiver_host_, sender_host_;
  std::unique_ptr<ExecutiveProcess> receiver_, sender_;
  double receive_blocks_before_ = -1;
};

int raw_connect(const std::string& host, std::uint16_t port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(port);
  inet_pton(AF_INET, host.c_str(), &address.sin_addr);
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

void reset_connection(int fd) {  // SO_LINGER 0 makes close() send RST
  linger hard{1, 0};
  setsockopt(fd, SOL_SOCKET, SO_LINGER, &hard, sizeof hard);
  close(fd);
}

std::array<std::byte, daqx::kFrameHeaderSize> header(std::uint32_t total, daqx::Tid target) {
  return daqx::test::frame_header_bytes(total, target, 999);
}

// A client that connects to the endpoint the proper way and sends one malformed frame, or (ibv) breaks the
// connection protocol the way kind says: tests/programs/ofi_bad_peer over libfabric, ibv_bad_peer over ptibv.
ProcessResult run_fabric_bad_peer(const TransportProfile& transport, std::uint16_t port, const std::string& kind) {
  if (transport.capabilities.connection_manager == "unix") {
#ifdef DAQX_TEST_SHM_BAD_PEER
    return run_process({DAQX_TEST_SHM_BAD_PEER, "--host", transport.host, "--port", std::to_string(port), "--case", kind,
                        "--target", std::to_string(kReceiver)},
                       std::chrono::seconds(20));
#endif
  }
  if (transport.capabilities.connection_manager == "rdma_cm") {
#ifdef DAQX_TEST_IBV_BAD_PEER
    return run_process({DAQX_TEST_IBV_BAD_PEER, "--host", transport.host, "--port", std::to_string(port), "--case",
                        kind, "--target", std::to_string(kReceiver)},
                       std::chrono::seconds(20));
#else
    skip_for_environment("DAQX_TRANSPORT_REQUIRE", transport_skip_exit_code,
                         "ibv_bad_peer is not built (libibverbs or librdmacm was not found)");
#endif
  }
#ifdef DAQX_TEST_OFI_BAD_PEER
  return run_process({DAQX_TEST_OFI_BAD_PEER, "--provider", transport.provider, "--host", transport.host, "--port",
                      std::to_string(port), "--case", kind, "--target", std::to_string(kReceiver)},
                     std::chrono::seconds(20));
#else
  (void)port;
  (void)kind;
  skip_for_environment("DAQX_TRANSPORT_REQUIRE", transport_skip_exit_code,
                       "ofi_bad_peer is not built (libfabric was not found)");
#endif
}

// Runs the bad client once for each kind: each ends as planned, and the executive still answers after each.
void run_bad_clients(const TransportProfile& transport, std::uint16_t port, ExecutiveProcess& receiver,
                     std::initializer_list<const char*> kinds) {
  for (const char* kind : kinds) {
    const ProcessResult client = run_fabric_bad_peer(transport, port, kind);
    INFO(kind << ":\n" << client.output);
    CHECK(client.exit_code == 0);
    CHECK(receiver.get("/api/executive").status == 200);
  }
}

}  // namespace

TEST_CASE("bad peers sending malformed frames on a plain socket lose only their own connection: the executive "
          "stays up, frees every block and serves others", "[transport][process][faults]") {
  const TransportProfile& transport = suite_transport();
  if (!transport.capabilities.frames_on_plain_tcp) skip_test("a plain socket does not carry frames to this transport");
  HonestTraffic traffic(transport, "bad-raw-frames");
  ExecutiveProcess& receiver = traffic.receiver();
  const std::uint16_t port = traffic.receiver_port();

  // 1. garbage
  int garbage = raw_connect(transport.host, port);
  REQUIRE(garbage >= 0);
  send_all(garbage, "GET / HTTP/1.0\r\n\r\nthis is not a daqx frame at all......", 56);
  // 2. a frame cut short, then the peer goes away
  int cut = raw_connect(transport.host, port);
  const auto big = header(100000, kReceiver);
  send_all(cut, big.data(), big.size());
  std::vector<char> part(50000, 'x');
  send_all(cut, part.data(), part.size());
  // 3. a length field far beyond the maximum frame size
  int huge = raw_connect(transport.host, port);
  const auto h = header(0xfffffff0u, kReceiver);
  send_all(huge, h.data(), h.size());
  // 4. a well-formed frame for an application that is not there
  int stray = raw_connect(transport.host, port);
  const auto s = header(64, 4242);
  std::vector<std::byte> stray_frame(s.begin(), s.end());
  stray_frame.resize(64);
  send_all(stray, stray_frame.data(), stray_frame.size());
  // 5. an abrupt reset in the middle of a frame
  int reset = raw_connect(transport.host, port);
  send_all(reset, big.data(), big.size());
  send_all(reset, part.data(), 1000);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  close(cut);
  reset_connection(reset);

  CHECK(wait_until([&] {
    return transport_metric(receiver, "bad_streams") >= 3 && transport_metric(receiver, "truncated_frames") >= 2;
  }));
  INFO(receiver.output());
  CHECK(transport_metric(receiver, "bad_streams") == 3);       // garbage, huge length, unknown target
  CHECK(transport_metric(receiver, "truncated_frames") == 2);  // cut short, reset
  CHECK_THAT(receiver.output(), Contains("bad magic") && Contains("above the maximum frame size") &&
                                    Contains("not here") && Contains("middle of a frame"));
  close(garbage);
  close(huge);
  close(stray);
  traffic.check_undisturbed_and_drained();
}

TEST_CASE("garbage on the endpoint's TCP port loses only its own connection: the executive stays up, still "
          "accepts peers, frees every block and serves others", "[transport][process][faults]") {
  const TransportProfile& transport = suite_transport();
  if (!transport.capabilities.plain_tcp_port || transport.capabilities.frames_on_plain_tcp)
    skip_test("no plain TCP port that speaks a fabric's protocol to send garbage to");
  HonestTraffic traffic(transport, "bad-raw-garbage");
  ExecutiveProcess& receiver = traffic.receiver();
  const std::uint16_t port = traffic.receiver_port();

  // What a confused client or a port scanner sends: text, a daqx frame where the fabric expects its own
  // handshake, a long stream of bytes, nothing at all, and an abrupt reset.
  int text = raw_connect(transport.host, port);
  REQUIRE(text >= 0);
  send_all(text, "GET / HTTP/1.0\r\n\r\n", 18);
  int frame = raw_connect(transport.host, port);
  const auto h = header(64, kReceiver);
  send_all(frame, h.data(), h.size());
  int stream = raw_connect(transport.host, port);
  std::vector<unsigned char> noise(256 * 1024);
  for (std::size_t i = 0; i < noise.size(); ++i) noise[i] = static_cast<unsigned char>((i * 2654435761u) >> 13);
  send_all(stream, noise.data(), noise.size());
  int silent = raw_connect(transport.host, port);
  int reset = raw_connect(transport.host, port);
  send_all(reset, noise.data(), 1000);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  reset_connection(reset);
  close(silent);
  close(text);
  close(frame);
  close(stream);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));

  INFO(receiver.output());
  CHECK(receiver.get("/api/executive").status == 200);
  // Not wedged: a proper client connecting now is accepted and its bad frame is seen and refused.
  if (transport.capabilities.connection_manager == "libfabric") {
    const double bad_before = transport_metric(receiver, "bad_streams");
    const ProcessResult client = run_fabric_bad_peer(transport, port, "unknown-target");
    INFO(client.output);
    CHECK(client.exit_code == 0);
    CHECK(wait_until([&] { return transport_metric(receiver, "bad_streams") >= bad_before + 1; }));
  }
  traffic.check_undisturbed_and_drained();
}

TEST_CASE("a fabric client sending malformed frames loses only its own connection: the executive stays up, frees "
          "every block and serves others", "[transport][process][faults]") {
  const TransportProfile& transport = suite_transport();
  const std::string& manager = transport.capabilities.connection_manager;
  if (manager != "libfabric" && manager != "rdma_cm" && manager != "unix")
    skip_test("no bad client for connections made by " + manager + " (a libfabric, rdma_cm or ptshm client)");
  HonestTraffic traffic(transport, "bad-fabric-client");
  ExecutiveProcess& receiver = traffic.receiver();
  const double bad_before = transport_metric(receiver, "bad_streams");
  const double truncated_before = transport_metric(receiver, "truncated_frames");

  run_bad_clients(transport, traffic.receiver_port(), receiver, {"bad-magic", "oversized", "unknown-target", "truncated"});
  CHECK(wait_until([&] {
    return transport_metric(receiver, "bad_streams") >= bad_before + 3 &&
           transport_metric(receiver, "truncated_frames") >= truncated_before + 1;
  }));
  INFO(receiver.output());
  CHECK(transport_metric(receiver, "bad_streams") == bad_before + 3);  // bad magic, oversized, unknown target
  CHECK(transport_metric(receiver, "truncated_frames") == truncated_before + 1);
  CHECK_THAT(receiver.output(), Contains("bad magic") && Contains("above the maximum frame size") &&
                                    Contains("not here") && Contains("middle of a frame"));
  traffic.check_undisturbed_and_drained();
}

TEST_CASE("a fabric client whose messages carry no connection id, or a wrong one, has them dropped and counted: the "
          "shared receive context keeps its buffers and the others are undisturbed", "[transport][process][faults]") {
  const TransportProfile& transport = suite_transport();
  if (transport.capabilities.connection_manager != "libfabric") skip_test("no connection ids: connections are not libfabric's");
  HonestTraffic traffic(transport, "bad-id-client");
  ExecutiveProcess& receiver = traffic.receiver();
  // ptofi shares a receive context where the provider carries 8 bytes of remote CQ data (tcp); verbs has 4.
  if (!(transport_metric(receiver, "shared_receive_context") > 0))
    skip_test("provider " + transport.provider + " gives no shared receive context with 8 bytes of CQ data");
  const double before = transport_metric(receiver, "unattributed_messages");
  run_bad_clients(transport, traffic.receiver_port(), receiver, {"no-id", "wrong-id"});
  CHECK(wait_until([&] { return transport_metric(receiver, "unattributed_messages") >= before + 2; }));
  INFO(receiver.output());
  CHECK(transport_metric(receiver, "unattributed_messages") == before + 2);
  traffic.check_undisturbed_and_drained();
}

TEST_CASE("a local peer writing garbage into its shared-memory ring loses only its own connection, counted: the "
          "executive stays up, frees every block and serves others", "[transport][process][faults]") {
  const TransportProfile& transport = suite_transport();
  if (transport.capabilities.connection_manager != "unix") skip_test("no rings in shared memory: connections are not local");
  HonestTraffic traffic(transport, "bad-ring");
  ExecutiveProcess& receiver = traffic.receiver();
  const double bad_before = transport_metric(receiver, "bad_streams");
  // A block past its chunk, a length that wraps, a chunk never announced, unknown flags, a tail far ahead.
  run_bad_clients(transport, traffic.receiver_port(), receiver, {"offset", "length", "chunk", "flags", "tail"});
  CHECK(wait_until([&] { return transport_metric(receiver, "bad_streams") >= bad_before + 5; }));
  INFO(receiver.output());
  CHECK(transport_metric(receiver, "bad_streams") == bad_before + 5);
  CHECK_THAT(receiver.output(), Contains("outside its chunk") && Contains("never announced") &&
                                    Contains("unknown flags") && Contains("impossible tail"));
  traffic.check_undisturbed_and_drained();
}

TEST_CASE("garbage on the rdma_cm port loses only its own connection attempts: the executive stays up, refuses "
          "them, still accepts peers, frees every block and serves others", "[transport][process][faults]") {
  const TransportProfile& transport = suite_transport();
  if (transport.capabilities.connection_manager != "rdma_cm") skip_test("no rdma_cm port: connections are not made by rdma_cm");
  HonestTraffic traffic(transport, "bad-rdma-cm");
  ExecutiveProcess& receiver = traffic.receiver();
  const std::uint16_t port = traffic.receiver_port();
  const double refused_before = transport_metric(receiver, "connection_requests_refused");

  // Connection requests that are not ptibv's, or of another version, or that leave no room for credits: refused.
  run_bad_clients(transport, port, receiver,
                  {"garbage-private-data", "no-private-data", "wrong-version", "zero-credit-buffers"});
  // Noise on the RoCE v2 port, and a peer that connects properly and vanishes without a word.
  for (const char* kind : {"udp-garbage", "connect-and-vanish"}) {
    const ProcessResult client = run_fabric_bad_peer(transport, port, kind);
    INFO(kind << ":\n" << client.output);
    CHECK(client.exit_code == 0);
  }
  // Not wedged: a proper client is accepted and its frame delivered.
  const ProcessResult good = run_fabric_bad_peer(transport, port, "good");
  INFO("good:\n" << good.output);
  CHECK(good.exit_code == 0);

  INFO(receiver.output());
  CHECK(wait_until([&] { return transport_metric(receiver, "connection_requests_refused") >= refused_before + 4; }));
  CHECK(transport_metric(receiver, "connection_requests_refused") == refused_before + 4);
  CHECK(receiver.get("/api/executive").status == 200);
  traffic.check_undisturbed_and_drained();
}

TEST_CASE("a peer killed mid-run frees its buffers on the survivor, and the connection comes back when it restarts",
          "[transport][process][faults]") {
  const TransportProfile& transport = suite_transport();
  Host a, b;
  PartitionBuilder partition("restart");
  add_nton_context(partition, transport, a, Traffic::throughput)
      .context.application("nton::Receiver", kReceiver, 0, "data");
  add_nton_context(partition, transport, b, Traffic::throughput)
      .context.application("nton::Sender", kSender, 0, "data")
      .properties({{"frameSize", "65536", ""}, {"receivers", "21", ""}});
  const std::string path = write_file("restart.xml", partition.xml());
  auto receiver = std::make_unique<ExecutiveProcess>(path, a.url());
  ExecutiveProcess sender(path, b.url());
  REQUIRE(receiver->wait_ready());
  REQUIRE(sender.wait_ready());
  for (auto* e : {receiver.get(), &sender}) REQUIRE(e->transition("configure").status == 200);
  for (auto* e : {receiver.get(), &sender}) REQUIRE(e->transition("enable").status == 200);
  REQUIRE(receiver->wait_metric(kReceiver, "frames_received", 2000));

  SECTION("the sender dies: the receiver frees what it held and stays up") {
    sender.kill_now();
    CHECK(wait_until([&] {
      return transport_metric(*receiver, "connections_closed_by_peer") + transport_metric(*receiver, "truncated_frames") >= 1;
    }));
    CHECK(receiver->transition("stop").status == 200);
    INFO(receiver->output());
    CHECK(wait_until([&] { return transport_metric(*receiver, "incoming_connections") == 0; }));
    // At rest: nothing held for the dead sender (a shared receive queue keeps its buffers posted for the next).
    CHECK(wait_until([&] {
      return pool_blocks_used(*receiver, transport.receive_pool) == receive_blocks_at_rest(*receiver, transport);
    }));
    CHECK(receiver->get("/api/executive").status == 200);
    CHECK(receiver->stop() == 0);
  }
  SECTION("the receiver dies and restarts: the sender reconnects") {
    receiver->kill_now();
    CHECK(wait_until([&] { return transport_metric(sender, "send_errors") > 0; }));
    CHECK(sender.get("/api/executive").status == 200);
    receiver = std::make_unique<ExecutiveProcess>(path, a.url());
    REQUIRE(receiver->wait_ready());
    INFO(sender.output() << receiver->output());
    CHECK(wait_until([&] { return transport_metric(sender, "reconnects") >= 1; }));
    // Whether the sending application saw the loss depends on when it posted: a post while the connection was
    // down fails (the frame is lost, SendStatus::error), and a sender that lost every receiver fails its run;
    // a post while it was being re-opened only waits. Either way the operator's way back is a new run.
    if (sender.transition("stop").status != 200) {
      CHECK_THAT(sender.output(), Contains("the connections to all receivers failed"));
      REQUIRE(sender.transition("halt").status == 200);
      REQUIRE(sender.transition("configure").status == 200);
    }
    REQUIRE(receiver->transition("configure").status == 200);
    REQUIRE(receiver->transition("enable").status == 200);
    REQUIRE(sender.transition("enable").status == 200);
    CHECK(receiver->wait_metric(kReceiver, "frames_received", 1000));
    CHECK(receiver->metric(kReceiver, "pattern_errors") == 0);
    CHECK(sender.stop() == 0);
    CHECK(receiver->stop() == 0);
  }
}
