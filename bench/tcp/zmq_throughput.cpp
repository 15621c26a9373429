// ZeroMQ PUSH/PULL throughput, one stream, over loopback TCP (bench/tcp_comparison.py) or ipc://
// (bench/shm_comparison.py): the best one connection of ZeroMQ can do, so daqx is compared with a competent
// ZeroMQ program rather than a naive one.
#include <zmq.h>

#include <cerrno>
#include <string>
#include <vector>

#include "common.hpp"

namespace {

constexpr const char* kUsage =
    "usage: daqx-bench-zmq-throughput pull --port P|--endpoint E [--timeout S]\n"
    "       daqx-bench-zmq-throughput push --port P|--endpoint E --size BYTES --duration S\n"
    "                                      [--zero-copy auto|on|off] [--timeout S]\n"
    "  pull binds tcp://127.0.0.1:P (or E, e.g. ipc:///tmp/x) and, at the end-of-run message, prints one JSON\n"
    "  line: bytes, messages and seconds from the first message to the end; push connects and sends messages\n"
    "  of SIZE bytes for S seconds, then one empty message that marks the end.\n";

// Below this size a copy into a fresh message is cheaper than the bookkeeping of a zero-copy message
// (zmq_msg_init_data allocates a reference-counted content record per message); measured on loopback.
constexpr std::size_t kZeroCopyFrom = 16 * 1024;

[[noreturn]] void die(const char* what) {
  std::fprintf(stderr, "daqx-bench-zmq-throughput: %s: %s\n", what, zmq_strerror(zmq_errno()));
  std::exit(1);
}

void set_int(void* socket, int option, int value, const char* name) {
  if (zmq_setsockopt(socket, option, &value, sizeof value) != 0) die(name);
}

// The payload is never written after start, so every in-flight message may point at it: nothing to free.
void keep_buffer(void*, void*) {}

int pull(const std::string& endpoint, double timeout) {
  void* context = zmq_ctx_new();
  void* socket = zmq_socket(context, ZMQ_PULL);
  set_int(socket, ZMQ_RCVTIMEO, static_cast<int>(timeout * 1000), "ZMQ_RCVTIMEO");
  if (zmq_bind(socket, endpoint.c_str()) != 0) die("bind");
  zmq_msg_t message;
  zmq_msg_init(&message);
  // The clock starts at the first message, which is not counted: what is measured is the steady stream.
  if (zmq_msg_recv(&message, socket, 0) < 0) die("first message");
  auto start = daqx::bench::Clock::now();
  std::uint64_t bytes = 0;
  std::uint64_t messages = 0;
  for (;;) {
    int size = zmq_msg_recv(&message, socket, 0);  // releases the previous message's content
    if (size < 0) {
      if (zmq_errno() == EINTR) continue;
      die("recv");
    }
    if (size == 0) break;  // end of run
    bytes += static_cast<std::uint64_t>(size);
    ++messages;
  }
  double seconds = daqx::bench::seconds(daqx::bench::Clock::now() - start);
  zmq_msg_close(&message);
  zmq_close(socket);
  zmq_ctx_term(context);
  std::printf("{\"bytes\": %llu, \"messages\": %llu, \"seconds\": %.6f}\n", static_cast<unsigned long long>(bytes),
              static_cast<unsigned long long>(messages), seconds);
  return 0;
}

int push(const std::string& endpoint, std::size_t size, double duration, bool zero_copy, double timeout) {
  void* context = zmq_ctx_new();
  void* socket = zmq_socket(context, ZMQ_PUSH);
  set_int(socket, ZMQ_SNDTIMEO, static_cast<int>(timeout * 1000), "ZMQ_SNDTIMEO");
  set_int(socket, ZMQ_LINGER, static_cast<int>(timeout * 1000), "ZMQ_LINGER");  // bounds delivery at close
  if (zmq_connect(socket, endpoint.c_str()) != 0) die("connect");
  std::vector<char> payload(size, 'z');
  auto end = daqx::bench::Clock::now() + std::chrono::duration_cast<daqx::bench::Clock::duration>(
                                             std::chrono::duration<double>(duration));
  std::uint64_t messages = 0;
  // Reading the clock costs ~20 ns: once every 64 messages is plenty at 64 B and exact enough at 1 MiB.
  for (;;) {
    if ((messages & 63) == 0 && daqx::bench::Clock::now() >= end) break;
    if (zero_copy) {
      zmq_msg_t message;
      zmq_msg_init_data(&message, payload.data(), size, keep_buffer, nullptr);
      if (zmq_msg_send(&message, socket, 0) < 0) die("send");
    } else if (zmq_send(socket, payload.data(), size, 0) < 0) {
      die("send");
    }
    ++messages;
  }
  if (zmq_send(socket, nullptr, 0, 0) < 0) die("send end of run");
  zmq_close(socket);
  zmq_ctx_term(context);  // waits (up to the linger) until every message is on the wire
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  daqx::bench::Options options(argc, argv, kUsage);
  options.only({"port", "endpoint", "size", "duration", "zero-copy", "timeout"});
  std::string endpoint = daqx::bench::endpoint_option(options);
  double timeout = options.real("timeout", 30);
  if (options.role() == "pull") return pull(endpoint, timeout);
  if (options.role() == "push") {
    std::size_t size = options.number("size", 0);
    double duration = options.real("duration", 0);
    if (size == 0 || duration <= 0) options.fail("push needs --size and --duration");
    std::string mode = options.text("zero-copy", "auto");
    if (mode != "on" && mode != "off" && mode != "auto") options.fail("--zero-copy is auto, on or off");
    bool zero_copy = mode == "on" || (mode == "auto" && size >= kZeroCopyFrom);
    return push(endpoint, size, duration, zero_copy, timeout);
  }
  options.fail("unknown role '" + options.role() + "'");
}
