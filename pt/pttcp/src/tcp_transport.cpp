// pttcp implementation: sockets, gather writes straight from Ref chains in both modes, and the receive path
// with back-pressure. Connection handling, delivery and teardown are pt/base's.
#include "tcp_transport.hpp"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <stdexcept>
#include <utility>

#include "daqx/pt/host_resolver.hpp"

namespace daqx::pttcp {
namespace {

using pt::errno_text;
using State = pt::OutgoingConnection::State;
constexpr int kMaxIovecs = 1024;     // IOV_MAX on Linux
constexpr int kReadsPerWakeup = 64;  // then let other connections have the thread

void set_socket_options(int fd, const Settings& settings, bool sending) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);  // we do our own coalescing
  if (sending && settings.send_buffer > 0)
    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &settings.send_buffer, sizeof settings.send_buffer);
  if (!sending && settings.receive_buffer > 0)
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &settings.receive_buffer, sizeof settings.receive_buffer);
}

}  // namespace

// ---- life cycle -----------------------------------------------------------------------------------------

TcpTransport::TcpTransport(TransportHost& host)
    : ConnectionTransport(host, &pttcp::describe), settings_(Settings::from(host.params())) {
  receive_pool_ = &this->host().make_pool("recv", receive_pool_config());
  receive_pool_->on_available([this] { request_resume(); });
  start_threads();
}

void TcpTransport::listen(const EndpointAddress& local) {
  local_ = local;
  pt::SocketAddress address = pt::resolve_address(local.hostname, local.port, true);
  listen_fd_ = socket(address.storage.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (listen_fd_ < 0) throw std::runtime_error("socket: " + errno_text(errno));
  int one = 1;
  setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (settings_.receive_buffer > 0)  // inherited by accepted sockets, and must be set before listen to count
    setsockopt(listen_fd_, SOL_SOCKET, SO_RCVBUF, &settings_.receive_buffer, sizeof settings_.receive_buffer);
  if (bind(listen_fd_, address.get(), address.length) != 0)
    throw std::runtime_error("bind to " + pt::address_text(address.get()) + ": " + errno_text(errno));
  if (::listen(listen_fd_, 256) != 0) throw std::runtime_error("listen: " + errno_text(errno));
  receive_waiter().add(listen_fd_, &listen_fd_);
}

void TcpTransport::stop_endpoints() noexcept {
  if (listen_fd_ < 0) return;
  receive_waiter().remove(listen_fd_);
  close(listen_fd_);
  listen_fd_ = -1;
}

// ---- send side ------------------------------------------------------------------------------------------

std::unique_ptr<pt::OutgoingConnection> TcpTransport::make_outgoing(const EndpointAddress& remote) {
  // The name is looked up in the background, with every other peer's, and resolved when the connection starts:
  // naming hundreds of peers at start waits for none of them.
  pt::HostResolver::shared().prefetch(remote.hostname);
  return std::make_unique<Outgoing>(connection_settings().send_queue);
}

void TcpTransport::start_connect(pt::OutgoingConnection& base) {
  auto& c = static_cast<Outgoing&>(base);
  try {
    c.address = pt::HostResolver::shared().resolve(c.remote.hostname, c.remote.port);
  } catch (const std::exception& e) {
    // Unlike a peer not listening yet, a name that does not resolve is a mistake to see: said once, then retried.
    if (!std::exchange(c.unresolved_told, true))
      host().log(LogLevel::warning, "connection to " + c.remote.text() + ": " + e.what());
    teardown(c, e.what());
    return;
  }
  c.fd = socket(c.address.storage.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (c.fd < 0) {
    teardown(c, "socket: " + errno_text(errno));
    return;
  }
  set_socket_options(c.fd, settings_, true);
  if (::connect(c.fd, c.address.get(), c.address.length) != 0 && errno != EINPROGRESS) {
    teardown(c, "connect: " + errno_text(errno));
    return;
  }
  // Writable (or in error) when the connection is made; readable never, but when the peer goes away.
  send_waiter().add(c.fd, &c, EPOLLOUT | EPOLLRDHUP);
  c.output_armed = true;
}

std::size_t TcpTransport::close_link(pt::OutgoingConnection& base) noexcept {
  auto& c = static_cast<Outgoing&>(base);
  if (c.fd >= 0) {
    send_waiter().remove(c.fd);
    close(c.fd);
  }
  c.fd = -1;
  c.output_armed = false;
  c.head_written = 0;  // a frame half written is still in the queue: lost with it, and counted
  return 0;
}

void TcpTransport::arm_output(Outgoing& c, bool on) noexcept {
  if (c.output_armed == on || c.fd < 0) return;
  send_waiter().modify(c.fd, &c, (on ? EPOLLOUT : 0u) | EPOLLRDHUP);
  c.output_armed = on;
}

void TcpTransport::pump(pt::OutgoingConnection& base) noexcept {
  auto& c = static_cast<Outgoing&>(base);
  // Not up, or the socket is full: the send thread writes when it can.
  if (c.state != State::up || c.output_armed || c.queue.empty() || !c.failure.empty()) return;
  // Throughput mode: the frames wait for more, up to packSize or packTimeout; a writev of up to 1024 blocks
  // at most (IOV_MAX) is written at once anyway.
  if (c.queue.size() < kMaxIovecs / 2 && hold_for_packing(c, c.queued_bytes, connection_settings().pack_bytes)) return;
  c.flush_now = false;
  std::string error;
  if (!flush(c, error)) {
    c.failure = error;
    request_attention(c);
  }
}

bool TcpTransport::flush(Outgoing& c, std::string& error) noexcept {
  while (!c.queue.empty()) {
    iovec vectors[kMaxIovecs];
    int count = 0;
    std::size_t skip = c.head_written;
    for (std::size_t i = 0; i < c.queue.size() && count < kMaxIovecs; ++i) {
      for (mem::Block* block = c.queue.at(i).head(); block != nullptr && count < kMaxIovecs; block = block->next()) {
        if (skip >= block->size()) {
          skip -= block->size();
          continue;
        }
        vectors[count].iov_base = block->data() + skip;
        vectors[count].iov_len = block->size() - skip;
        skip = 0;
        ++count;
      }
    }
    msghdr message{};
    message.msg_iov = vectors;
    message.msg_iovlen = static_cast<std::size_t>(count);
    // One system call for up to 1024 blocks, written straight from the pool: no user-space copy.
    ssize_t written = sendmsg(c.fd, &message, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (written < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        arm_output(c, true);
        return true;
      }
      error = "write: " + errno_text(errno);
      return false;
    }
    c.counters.messages_sent.add(1);
    auto left = static_cast<std::size_t>(written);
    while (left > 0) {
      const std::size_t total = c.queue.front().total_size();
      const std::size_t rest = total - c.head_written;
      if (left < rest) {
        c.head_written += left;
        break;
      }
      left -= rest;
      c.head_written = 0;
      c.counters.frames_sent.add(1);
      c.counters.bytes_sent.add(total);
      c.pop_front();  // the frame is on the wire: its blocks go back to their pools
    }
  }
  arm_output(c, false);
  return true;
}

void TcpTransport::on_send_ready(void* tag, std::uint32_t events) {
  auto& c = *static_cast<Outgoing*>(tag);
  with_lock(c, [&] {
    if (c.fd < 0) return;
    if (c.state == State::connecting) {
      int error = 0;
      socklen_t length = sizeof error;
      getsockopt(c.fd, SOL_SOCKET, SO_ERROR, &error, &length);
      if (error == 0 && (events & EPOLLOUT) != 0) {
        arm_output(c, false);
        connection_up(c);
      } else {
        teardown(c, "connect: " + errno_text(error != 0 ? error : ECONNREFUSED));
      }
    } else if ((events & (EPOLLERR | EPOLLHUP | EPOLLRDHUP | EPOLLIN)) != 0) {
      // Nobody sends to us on an outgoing connection: anything readable is the peer going away.
      teardown(c, (events & EPOLLERR) != 0 ? "socket error" : "closed by the peer");
    } else if ((events & EPOLLOUT) != 0) {
      std::string error;
      if (!flush(c, error)) teardown(c, error);
    }
  });
}

// ---- receive side ---------------------------------------------------------------------------------------

void TcpTransport::accept_connections() {
  for (;;) {
    sockaddr_storage address{};
    socklen_t length = sizeof address;
    int fd = accept4(listen_fd_, reinterpret_cast<sockaddr*>(&address), &length, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK)
        host().log(LogLevel::warning, "accept on " + local_.text() + ": " + errno_text(errno));
      return;
    }
    const std::string remote = pt::address_text(reinterpret_cast<sockaddr*>(&address));
    if (over_incoming_limit(remote)) {
      close(fd);  // at once, before any buffer is made for it: a flood costs nothing that stays
      continue;
    }
    set_socket_options(fd, settings_, false);
    auto connection = std::make_unique<Incoming>();
    connection->last_byte = Clock::now();
    connection->fd = fd;
    connection->remote = remote;
    connection->reader = std::make_unique<FrameReader>(*receive_pool_, settings_.staging_bytes, settings_.copy_threshold,
                                                       connection_settings().max_frame_size);
    auto& c = static_cast<Incoming&>(adopt(std::move(connection)));
    receive_waiter().add(fd, &c, EPOLLIN | EPOLLRDHUP);
    incoming_up(c);
  }
}

void TcpTransport::stop_reading(Incoming& c) noexcept {
  if (!c.reading || c.fd < 0) return;
  receive_waiter().modify(c.fd, &c, 0);  // errors and hang-ups are still reported
  c.reading = false;
}

void TcpTransport::delivery_paused(pt::IncomingConnection& c) { stop_reading(static_cast<Incoming&>(c)); }

void TcpTransport::resume_wire(pt::IncomingConnection& base) {
  auto& c = static_cast<Incoming&>(base);
  if (c.paused || c.reading || c.fd < 0) return;
  receive_waiter().modify(c.fd, &c, EPOLLIN | EPOLLRDHUP);
  c.reading = true;
  c.waiting_for_pool = false;
  c.last_byte = Clock::now();  // the pause was ours, not the peer's
  serve(c);
}

void TcpTransport::close_wire(pt::IncomingConnection& base) noexcept {
  auto& c = static_cast<Incoming&>(base);
  if (c.fd >= 0) {
    receive_waiter().remove(c.fd);
    close(c.fd);
  }
  c.fd = -1;
  c.reader.reset();  // a frame half received goes back to the pool with the staging buffer
}

void TcpTransport::serve(Incoming& c) {
  if (c.closed || c.paused || !c.reading) return;
  for (int reads = 0;;) {
    Frame frame;
    switch (c.reader->next(frame)) {
      case FrameReader::Result::frame:
        if (!deliver(c, frame)) return;
        continue;
      case FrameReader::Result::no_memory:
        // Back-pressure: stop reading until the receive pool has blocks again.
        events().receive_pool_waits.add();
        c.waiting_for_pool = true;
        stop_reading(c);
        return;
      case FrameReader::Result::bad_frame:
        close_incoming(c, "bad frame: " + c.reader->error(), pt::Ending::bad);
        return;
      case FrameReader::Result::need_more:
        break;
    }
    if (reads++ == kReadsPerWakeup) return;  // level-triggered: epoll reports the rest
    iovec vectors[64];
    const int count = c.reader->read_target(vectors, 64);
    const ssize_t got = readv(c.fd, vectors, count);
    if (got > 0) {
      c.last_byte = Clock::now();
      c.reader->advance(static_cast<std::size_t>(got));
      continue;
    }
    const pt::Ending ending = c.reader->mid_frame() ? pt::Ending::truncated : pt::Ending::normal;
    if (got == 0) {
      close_incoming(c, "closed by the peer", ending);
      return;
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return;
    close_incoming(c, "read: " + errno_text(errno), ending);
    return;
  }
}

void TcpTransport::on_receive_ready(void* tag, std::uint32_t events) {
  if (tag == &listen_fd_) {
    accept_connections();
    return;
  }
  auto& c = *static_cast<Incoming*>(tag);
  if (c.closed) return;
  if (!c.reading && (events & (EPOLLERR | EPOLLHUP)) != 0) {
    close_incoming(c, "socket error while paused", pt::Ending::truncated);
    return;
  }
  serve(c);
}

void TcpTransport::receive_housekeeping(Clock::time_point now) {
  close_stalled(now);
  // Closed connections go once no event of this round can point at them any more.
  forget_closed_incoming();
}

// A connection that stops in the middle of a frame holds that frame's blocks (and its slot of maxIncoming): it
// gets stallTimeout to go on, then it is closed as truncated. Paused connections are not stalled (the pause is
// ours). Looked at every 100 ms, not every round: the scan is over every incoming connection.
void TcpTransport::close_stalled(Clock::time_point now) {
  if (settings_.stall_timeout.count() == 0 || now < next_stall_check_) return;
  next_stall_check_ = now + std::chrono::milliseconds(100);
  for_each_incoming([&](pt::IncomingConnection& base) {
    auto& c = static_cast<Incoming&>(base);
    if (!c.reading || c.reader == nullptr || !c.reader->mid_frame() || now - c.last_byte < settings_.stall_timeout)
      return;
    stalled_.fetch_add(1, std::memory_order_relaxed);
    close_incoming(c, "no byte for " + std::to_string(settings_.stall_timeout.count()) + " ms in the middle of a frame",
                   pt::Ending::truncated);
  });
}

void TcpTransport::report_wire(MetricSink& sink) const {
  sink.setting("mode_throughput", connection_settings().throughput_mode ? 1 : 0, "1 in throughput mode, 0 in latency mode");
  sink.counter("stalled_connections", static_cast<double>(stalled_.load(std::memory_order_relaxed)),
               "incoming connections closed: no byte for stallTimeout in the middle of a frame");
}

}  // namespace daqx::pttcp
