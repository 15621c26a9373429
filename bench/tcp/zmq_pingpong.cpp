// ZeroMQ REQ/REP round-trip time over loopback TCP (bench/tcp_comparison.py) or ipc:// (bench/shm_comparison.py): what a message library's
// I/O thread hand-offs add to the plain TCP round trip.
#include <zmq.h>

#include <algorithm>
#include <cerrno>
#include <string>
#include <vector>

#include "common.hpp"

namespace {

constexpr const char* kUsage =
    "usage: daqx-bench-zmq-pingpong rep --port P|--endpoint E [--timeout S]\n"
    "       daqx-bench-zmq-pingpong req --port P|--endpoint E --size BYTES [--count N] [--warmup N]\n"
    "                                   [--timeout S]\n"
    "  rep binds tcp://127.0.0.1:P (or E, e.g. ipc:///tmp/x) and echoes every message until an empty one;\n"
    "  req connects and prints one JSON line with the round-trip times (us) of COUNT round trips after WARMUP.\n";

[[noreturn]] void die(const char* what) {
  std::fprintf(stderr, "daqx-bench-zmq-pingpong: %s: %s\n", what, zmq_strerror(zmq_errno()));
  std::exit(1);
}

void set_int(void* socket, int option, int value, const char* name) {
  if (zmq_setsockopt(socket, option, &value, sizeof value) != 0) die(name);
}

int receive(zmq_msg_t& message, void* socket) {
  for (;;) {
    int size = zmq_msg_recv(&message, socket, 0);
    if (size >= 0) return size;
    if (zmq_errno() != EINTR) die("recv");
  }
}

void send(zmq_msg_t& message, void* socket) {
  for (;;) {
    if (zmq_msg_send(&message, socket, 0) >= 0) return;
    if (zmq_errno() != EINTR) die("send");
  }
}

int echo(const std::string& endpoint, double timeout) {
  void* context = zmq_ctx_new();
  void* socket = zmq_socket(context, ZMQ_REP);
  set_int(socket, ZMQ_RCVTIMEO, static_cast<int>(timeout * 1000), "ZMQ_RCVTIMEO");
  set_int(socket, ZMQ_SNDTIMEO, static_cast<int>(timeout * 1000), "ZMQ_SNDTIMEO");
  set_int(socket, ZMQ_LINGER, 1000, "ZMQ_LINGER");
  if (zmq_bind(socket, endpoint.c_str()) != 0) die("bind");
  zmq_msg_t message;
  zmq_msg_init(&message);
  // The received message goes back as it is: no copy on the echo side, as nton::PingPong's pong.
  for (;;) {
    int size = receive(message, socket);
    send(message, socket);
    if (size == 0) break;  // the end; its empty reply lets the requester close cleanly
  }
  zmq_msg_close(&message);
  zmq_close(socket);
  zmq_ctx_term(context);
  return 0;
}

int ping(const std::string& endpoint, std::size_t size, std::size_t count, std::size_t warmup, double timeout) {
  void* context = zmq_ctx_new();
  void* socket = zmq_socket(context, ZMQ_REQ);
  set_int(socket, ZMQ_RCVTIMEO, static_cast<int>(timeout * 1000), "ZMQ_RCVTIMEO");
  set_int(socket, ZMQ_SNDTIMEO, static_cast<int>(timeout * 1000), "ZMQ_SNDTIMEO");
  set_int(socket, ZMQ_LINGER, 1000, "ZMQ_LINGER");
  if (zmq_connect(socket, endpoint.c_str()) != 0) die("connect");
  zmq_msg_t message;
  if (zmq_msg_init_size(&message, size) != 0) die("zmq_msg_init_size");
  std::fill_n(static_cast<char*>(zmq_msg_data(&message)), size, 'p');
  std::vector<double> samples;
  samples.reserve(count);  // no allocation of ours inside the timed loop
  // The reply is sent again as the next request, so neither side copies (nton::PingPong does the same).
  for (std::size_t i = 0; i < warmup + count; ++i) {
    auto start = daqx::bench::Clock::now();
    send(message, socket);
    int got = receive(message, socket);
    auto rtt = daqx::bench::Clock::now() - start;
    if (static_cast<std::size_t>(got) != size) {
      std::fprintf(stderr, "daqx-bench-zmq-pingpong: reply of %d bytes, expected %zu\n", got, size);
      return 1;
    }
    if (i >= warmup) samples.push_back(daqx::bench::microseconds(rtt));
  }
  zmq_msg_close(&message);
  zmq_msg_t end;
  zmq_msg_init(&end);
  send(end, socket);
  receive(end, socket);
  zmq_msg_close(&end);
  zmq_close(socket);
  zmq_ctx_term(context);
  daqx::bench::print_round_trips(size, samples);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  daqx::bench::Options options(argc, argv, kUsage);
  options.only({"port", "endpoint", "size", "count", "warmup", "timeout"});
  std::string endpoint = daqx::bench::endpoint_option(options);
  double timeout = options.real("timeout", 30);
  if (options.role() == "rep") return echo(endpoint, timeout);
  if (options.role() == "req") {
    std::size_t size = options.number("size", 64);
    if (size == 0) options.fail("--size must be at least 1");
    return ping(endpoint, size, options.number("count", 10000), options.number("warmup", 100), timeout);
  }
  options.fail("unknown role '" + options.role() + "'");
}
