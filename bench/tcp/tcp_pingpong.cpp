// Plain TCP ping-pong over loopback: the floor any message layer on TCP adds its round-trip time to
// (blocking send/recv of a fixed size, TCP_NODELAY), for bench/tcp_comparison.py.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "common.hpp"

namespace {

constexpr const char* kUsage =
    "usage: daqx-bench-tcp-pingpong server --port P --size BYTES [--timeout S]\n"
    "       daqx-bench-tcp-pingpong client --port P --size BYTES [--count N] [--warmup N] [--timeout S]\n"
    "  The server echoes every message of SIZE bytes until the client closes; the client prints one JSON\n"
    "  line with the round-trip times (us) of COUNT round trips after WARMUP. Address: 127.0.0.1.\n";

[[noreturn]] void die(const char* what) {
  std::fprintf(stderr, "daqx-bench-tcp-pingpong: %s: %s\n", what, std::strerror(errno));
  std::exit(1);
}

sockaddr_in loopback(std::uint16_t port) {
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(port);
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return address;
}

// Without it the kernel would hold a small reply back waiting for more (Nagle) and the RTT would measure
// the delayed-ACK timer instead of the path.
void no_delay(int fd) {
  int one = 1;
  if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) != 0) die("TCP_NODELAY");
}

// Bounds a peer that never comes or never answers: the run ends instead of hanging the driver.
void receive_timeout(int fd, double seconds) {
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(seconds);
  tv.tv_usec = static_cast<suseconds_t>((seconds - static_cast<double>(tv.tv_sec)) * 1e6);
  if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) != 0) die("SO_RCVTIMEO");
}

// false at a clean end of stream before the first byte.
bool receive_all(int fd, char* data, std::size_t size) {
  std::size_t done = 0;
  while (done < size) {
    ssize_t n = recv(fd, data + done, size - done, 0);
    if (n > 0) {
      done += static_cast<std::size_t>(n);
    } else if (n == 0) {
      if (done == 0) return false;
      errno = ECONNRESET;
      die("peer closed in the middle of a message");
    } else if (errno != EINTR) {
      die("recv");
    }
  }
  return true;
}

void send_all(int fd, const char* data, std::size_t size) {
  std::size_t done = 0;
  while (done < size) {
    ssize_t n = send(fd, data + done, size - done, MSG_NOSIGNAL);
    if (n >= 0) {
      done += static_cast<std::size_t>(n);
    } else if (errno != EINTR) {
      die("send");
    }
  }
}

int serve(std::uint16_t port, std::size_t size, double timeout) {
  int listener = socket(AF_INET, SOCK_STREAM, 0);
  if (listener < 0) die("socket");
  int one = 1;
  setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in address = loopback(port);
  if (bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) die("bind");
  if (listen(listener, 1) != 0) die("listen");
  receive_timeout(listener, timeout);  // also bounds accept
  int fd = accept(listener, nullptr, nullptr);
  if (fd < 0) die("accept");
  close(listener);
  no_delay(fd);
  receive_timeout(fd, timeout);
  std::vector<char> buffer(size);
  while (receive_all(fd, buffer.data(), size)) send_all(fd, buffer.data(), size);
  close(fd);
  return 0;
}

int ping(std::uint16_t port, std::size_t size, std::size_t count, std::size_t warmup, double timeout) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) die("socket");
  no_delay(fd);
  receive_timeout(fd, timeout);
  sockaddr_in address = loopback(port);
  // The server may still be starting: retry for a while before giving up.
  auto give_up = daqx::bench::Clock::now() + std::chrono::seconds(5);
  while (connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    if (errno != ECONNREFUSED || daqx::bench::Clock::now() > give_up) die("connect");
    usleep(10'000);
  }
  std::vector<char> buffer(size, 'p');
  std::vector<double> samples;
  samples.reserve(count);  // no allocation inside the timed loop
  for (std::size_t i = 0; i < warmup + count; ++i) {
    auto start = daqx::bench::Clock::now();
    send_all(fd, buffer.data(), size);
    if (!receive_all(fd, buffer.data(), size)) {
      errno = ECONNRESET;
      die("server closed");
    }
    auto rtt = daqx::bench::Clock::now() - start;
    if (i >= warmup) samples.push_back(daqx::bench::microseconds(rtt));
  }
  close(fd);
  daqx::bench::print_round_trips(size, samples);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  daqx::bench::Options options(argc, argv, kUsage);
  options.only({"port", "size", "count", "warmup", "timeout"});
  auto port = static_cast<std::uint16_t>(options.number("port", 0));
  std::size_t size = options.number("size", 64);
  double timeout = options.real("timeout", 30);
  if (port == 0) options.fail("--port is required");
  if (size == 0) options.fail("--size must be at least 1");
  if (options.role() == "server") return serve(port, size, timeout);
  if (options.role() == "client") {
    return ping(port, size, options.number("count", 10000), options.number("warmup", 100), timeout);
  }
  options.fail("unknown role '" + options.role() + "'");
}
