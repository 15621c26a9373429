// pttcp implementation: connection set-up and reconnection, gather writes straight from Ref chains in
// both modes, the receive path with back-pressure, and isolation of bad peers.
#include "tcp_transport.hpp"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <stdexcept>

namespace daqx::pttcp {
namespace {

using Clock = std::chrono::steady_clock;
constexpr int kMaxIovecs = 1024;  // IOV_MAX on Linux
constexpr int kReadsPerWakeup = 64;  // then let other connections have the thread

std::string errno_text(int error) { return std::strerror(error); }

std::string endpoint_text(const sockaddr_storage& address) {
  char host[INET6_ADDRSTRLEN] = "?";
  unsigned port = 0;
  if (address.ss_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(&address);
    inet_ntop(AF_INET, &in->sin_addr, host, sizeof host);
    port = ntohs(in->sin_port);
  } else if (address.ss_family == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(&address);
    inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof host);
    port = ntohs(in6->sin6_port);
  }
  return std::string(host) + ":" + std::to_string(port);
}

void resolve(const std::string& host, std::uint16_t port, bool passive, sockaddr_storage& out, socklen_t& length) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = passive ? AI_PASSIVE : 0;
  addrinfo* found = nullptr;
  std::string service = std::to_string(port);
  int error = getaddrinfo(host.c_str(), service.c_str(), &hints, &found);
  if (error != 0) throw std::runtime_error("cannot resolve '" + host + "': " + gai_strerror(error));
  // Prefer IPv4 where a name has both: loopback tests and most DAQ networks are IPv4.
  if (found == nullptr) throw std::runtime_error("cannot resolve '" + host + "': no address");
  addrinfo* chosen = found;
  for (addrinfo* a = found; a != nullptr; a = a->ai_next)
    if (a->ai_family == AF_INET) {
      chosen = a;
      break;
    }
  std::memcpy(&out, chosen->ai_addr, chosen->ai_addrlen);
  length = chosen->ai_addrlen;
  freeaddrinfo(found);
}

void set_socket_options(int fd, const Settings& settings, bool sending) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);  // we do our own coalescing
  if (sending && settings.send_buffer > 0)
    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &settings.send_buffer, sizeof settings.send_buffer);
  if (!sending && settings.receive_buffer > 0)
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &settings.receive_buffer, sizeof settings.receive_buffer);
}

void drain_eventfd(int fd) {
  std::uint64_t value = 0;
  while (read(fd, &value, sizeof value) > 0) {
  }
}

}  // namespace

// ---- parameters -----------------------------------------------------------------------------------------

std::vector<ParamSpec> parameter_specs() {
  return {
      {"mode", ParamType::string, "latency", "",
       "latency: write each frame at once; throughput: coalesce frames into large writes", {}, {}},
      {"packSize", ParamType::unsigned_integer, "262144", "bytes",
       "throughput mode: write when this many bytes are queued for a connection", 4096, 64.0 * 1024 * 1024},
      {"packTimeout", ParamType::unsigned_integer, "200", "microseconds",
       "throughput mode: write at the latest when the oldest queued frame is this old", 1, 1e6},
      {"connectAt", ParamType::string, "start", "", "start: connect to peers when the executive starts; first-use: on the first frame", {}, {}},
      {"sendBuffer", ParamType::unsigned_integer, "0", "bytes", "SO_SNDBUF of outgoing sockets (0: kernel default)", 0, 1 << 30},
      {"receiveBuffer", ParamType::unsigned_integer, "0", "bytes", "SO_RCVBUF of incoming sockets (0: kernel default)", 0, 1 << 30},
      {"sendQueue", ParamType::unsigned_integer, "4096", "frames",
       "frames queued per connection before post() says would-block", 16, 1 << 20},
      {"copyThreshold", ParamType::unsigned_integer, "16384", "bytes",
       "received frames up to this size are copied out of the staging buffer; larger ones are read in place", 64, 262144},
      {"reconnectMin", ParamType::unsigned_integer, "50", "ms", "first delay before reconnecting to a peer", 1, 60000},
      {"reconnectMax", ParamType::unsigned_integer, "2000", "ms", "longest delay between reconnection attempts", 1, 600000},
  };
}

Settings Settings::from(const ParamSet& params, std::uint32_t max_frame_size) {
  Settings s;
  const std::string& mode = params.string("mode");
  if (mode != "latency" && mode != "throughput")
    throw std::invalid_argument("parameter mode is '" + mode + "': expected latency or throughput");
  s.throughput_mode = mode == "throughput";
  const std::string& connect_at = params.string("connectAt");
  if (connect_at != "start" && connect_at != "first-use")
    throw std::invalid_argument("parameter connectAt is '" + connect_at + "': expected start or first-use");
  s.connect_at_start = connect_at == "start";
  s.pack_bytes = params.unsigned_integer("packSize");
  s.pack_timeout = std::chrono::microseconds(params.unsigned_integer("packTimeout"));
  s.send_buffer = static_cast<int>(params.unsigned_integer("sendBuffer"));
  s.receive_buffer = static_cast<int>(params.unsigned_integer("receiveBuffer"));
  s.send_queue = params.unsigned_integer("sendQueue");
  s.copy_threshold = params.unsigned_integer("copyThreshold");
  s.reconnect_min = std::chrono::milliseconds(params.unsigned_integer("reconnectMin"));
  s.reconnect_max = std::chrono::milliseconds(std::max(params.unsigned_integer("reconnectMax"), params.unsigned_integer("reconnectMin")));
  s.max_frame_size = max_frame_size;
  return s;
}

// ---- life cycle -----------------------------------------------------------------------------------------

TcpTransport::TcpTransport(TransportHost& host)
    : host_(host), settings_(Settings::from(host.params(), host.max_frame_size())) {
  // 256 B .. 1 MiB blocks; larger frames arrive in chains of 1 MiB blocks.
  receive_pool_ = &host_.make_pool("recv", mem::PoolConfig::geometric("recv", 256, 1u << 20, 1u << 20, 256u << 20));
  receive_pool_->on_available([this] {
    resume_requested_.store(true, std::memory_order_release);
    wake_receive_thread();
  });
  host_.on_deliver_ready([this] {
    resume_requested_.store(true, std::memory_order_release);
    wake_receive_thread();
  });
  outgoing_.reserve(kMaxPeers);
  send_epoll_ = epoll_create1(EPOLL_CLOEXEC);
  receive_epoll_ = epoll_create1(EPOLL_CLOEXEC);
  send_wake_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  receive_wake_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (send_epoll_ < 0 || receive_epoll_ < 0 || send_wake_ < 0 || receive_wake_ < 0)
    throw std::runtime_error("epoll/eventfd: " + errno_text(errno));
  epoll_event wake{};
  wake.events = EPOLLIN;
  wake.data.ptr = nullptr;
  epoll_ctl(send_epoll_, EPOLL_CTL_ADD, send_wake_, &wake);
  epoll_ctl(receive_epoll_, EPOLL_CTL_ADD, receive_wake_, &wake);
  send_thread_ = host_.start_thread("send", [this](std::stop_token stop) { send_loop(stop); });
  receive_thread_ = host_.start_thread("recv", [this](std::stop_token stop) { receive_loop(stop); });
}

TcpTransport::~TcpTransport() { stop(); }

void TcpTransport::listen(const EndpointAddress& local) {
  local_ = local;
  sockaddr_storage address{};
  socklen_t length = 0;
  resolve(local.hostname, local.port, true, address, length);
  listen_fd_ = socket(address.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (listen_fd_ < 0) throw std::runtime_error("socket: " + errno_text(errno));
  int one = 1;
  setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (settings_.receive_buffer > 0)  // inherited by accepted sockets, and must be set before listen to count
    setsockopt(listen_fd_, SOL_SOCKET, SO_RCVBUF, &settings_.receive_buffer, sizeof settings_.receive_buffer);
  if (bind(listen_fd_, reinterpret_cast<sockaddr*>(&address), length) != 0)
    throw std::runtime_error("bind to " + endpoint_text(address) + ": " + errno_text(errno));
  if (::listen(listen_fd_, 256) != 0) throw std::runtime_error("listen: " + errno_text(errno));
  epoll_event event{};
  event.events = EPOLLIN;
  event.data.ptr = &listen_fd_;
  epoll_ctl(receive_epoll_, EPOLL_CTL_ADD, listen_fd_, &event);
}

PeerId TcpTransport::connect(const EndpointAddress& remote) {
  std::lock_guard peers(peers_mutex_);
  if (outgoing_.size() >= kMaxPeers) throw std::runtime_error("more than " + std::to_string(kMaxPeers) + " peers");
  auto connection = std::make_unique<Outgoing>(settings_.send_queue);
  connection->id = static_cast<PeerId>(outgoing_.size());
  connection->remote = remote;
  resolve(remote.hostname, remote.port, false, connection->address, connection->address_length);
  Outgoing& c = *connection;
  outgoing_.push_back(std::move(connection));
  outgoing_count_.store(outgoing_.size(), std::memory_order_release);
  if (settings_.connect_at_start) {
    std::lock_guard lock(c.mutex);
    start_connect(c);
  }
  return c.id;
}

void TcpTransport::open_connections() {
  const auto now = Clock::now();
  std::size_t peers = outgoing_count_.load(std::memory_order_acquire);
  for (std::size_t i = 0; i < peers; ++i) {
    Outgoing& c = *outgoing_[i];
    std::lock_guard lock(c.mutex);
    // Not used yet: as the first frame would. Never up and refused (with first-use nothing retries it): again,
    // once its backoff has passed, so a later connect command reaches a peer that was not listening before.
    if (c.state == Outgoing::State::idle || (c.state == Outgoing::State::down && !c.ever_up && now >= c.retry_at))
      start_connect(c);
  }
}

void TcpTransport::stop() {
  if (stopped_.exchange(true)) return;
  if (send_thread_.joinable()) {
    send_thread_.request_stop();
    wake_send_thread();
    send_thread_.join();
  }
  if (receive_thread_.joinable()) {
    receive_thread_.request_stop();
    wake_receive_thread();
    receive_thread_.join();
  }
  std::lock_guard peers(peers_mutex_);
  for (auto& c : outgoing_) {
    std::lock_guard lock(c->mutex);
    if (c->fd >= 0) close(c->fd);
    c->fd = -1;
    c->queue.clear();  // every queued block goes back
    c->state = Outgoing::State::down;
  }
  for (Incoming& c : incoming_) {
    if (c.fd >= 0) close(c.fd);
    c.fd = -1;
    c.reader.reset();
    c.pending.data.reset();
  }
  incoming_.clear();
  for (int* fd : {&listen_fd_, &send_epoll_, &receive_epoll_, &send_wake_, &receive_wake_}) {
    if (*fd >= 0) close(*fd);
    *fd = -1;
  }
}

// ---- send side ------------------------------------------------------------------------------------------

void TcpTransport::wake_send_thread() noexcept {
  std::uint64_t one = 1;
  if (write(send_wake_, &one, sizeof one) < 0) {
    // The counter can only overflow after 2^64 wake-ups: nothing to do.
  }
}

void TcpTransport::start_connect(Outgoing& c) {
  c.fd = socket(c.address.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (c.fd < 0) {
    c.state = Outgoing::State::down;
    c.retry_at = Clock::now() + settings_.reconnect_max;
    return;
  }
  set_socket_options(c.fd, settings_, true);
  int result = ::connect(c.fd, reinterpret_cast<sockaddr*>(&c.address), c.address_length);
  if (result != 0 && errno != EINPROGRESS) {
    int error = errno;
    close(c.fd);
    c.fd = -1;
    c.state = Outgoing::State::down;
    c.backoff = std::clamp(c.backoff * 2, settings_.reconnect_min, settings_.reconnect_max);
    c.retry_at = Clock::now() + c.backoff;
    host_.log(LogLevel::debug, "connect to " + c.remote.text() + ": " + errno_text(error));
    return;
  }
  epoll_event event{};
  event.events = EPOLLOUT | EPOLLRDHUP;
  event.data.ptr = &c;
  epoll_ctl(send_epoll_, EPOLL_CTL_ADD, c.fd, &event);
  c.output_armed = true;
  c.state = Outgoing::State::connecting;
}

void TcpTransport::on_connected(Outgoing& c) {
  if (c.ever_up) c.counters.reconnects.fetch_add(1, std::memory_order_relaxed);
  c.ever_up = true;
  c.state = Outgoing::State::up;
  c.backoff = std::chrono::milliseconds(0);
  host_.connection_changed(c.id, true, "connected to " + c.remote.text());
  std::string error;
  std::vector<PeerId> down;
  if (!flush(c, error)) connection_lost(c, error, down);
}

void TcpTransport::arm_output(Outgoing& c, bool on) {
  if (c.output_armed == on || c.fd < 0) return;
  epoll_event event{};
  event.events = (on ? EPOLLOUT : 0u) | EPOLLRDHUP;
  event.data.ptr = &c;
  epoll_ctl(send_epoll_, EPOLL_CTL_MOD, c.fd, &event);
  c.output_armed = on;
}

bool TcpTransport::flush(Outgoing& c, std::string& error) {
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
      error = errno_text(errno);
      return false;
    }
    auto left = static_cast<std::size_t>(written);
    while (left > 0) {
      std::size_t total = c.queue.front().total_size();
      std::size_t rest = total - c.head_written;
      if (left < rest) {
        c.head_written += left;
        break;
      }
      left -= rest;
      c.head_written = 0;
      c.queued_bytes -= total;
      c.counters.frames.fetch_add(1, std::memory_order_relaxed);
      c.counters.bytes.fetch_add(total, std::memory_order_relaxed);
      c.queue.pop();  // the frame is on the wire: its blocks go back to their pools
    }
  }
  arm_output(c, false);
  return true;
}

void TcpTransport::connection_lost(Outgoing& c, const std::string& reason, std::vector<PeerId>& went_down) {
  if (c.fd >= 0) {
    epoll_ctl(send_epoll_, EPOLL_CTL_DEL, c.fd, nullptr);
    close(c.fd);
  }
  c.fd = -1;
  c.output_armed = false;
  c.flush_pending = false;
  // A connection that never came up (peer not listening yet) is retried, not an error; a lost one is. Frames
  // queued for either are lost with it, and counted.
  if (c.state == Outgoing::State::up)
    c.counters.errors.fetch_add(1 + c.queue.size(), std::memory_order_relaxed);
  else
    c.counters.errors.fetch_add(c.queue.size(), std::memory_order_relaxed);
  c.queue.clear();  // what was not written is lost with the connection; its blocks go back
  c.queued_bytes = 0;
  c.head_written = 0;
  bool was_up = c.state == Outgoing::State::up;
  c.state = Outgoing::State::down;
  c.backoff = std::clamp(c.backoff * 2, settings_.reconnect_min, settings_.reconnect_max);
  c.retry_at = Clock::now() + c.backoff;
  if (was_up) went_down.push_back(c.id);
  host_.log(was_up ? LogLevel::warning : LogLevel::debug, "connection to " + c.remote.text() + " lost: " + reason);
}

SendStatus TcpTransport::post(PeerId peer, mem::Ref& frame) noexcept {
  if (stopped_.load(std::memory_order_relaxed) || peer >= outgoing_count_.load(std::memory_order_acquire))
    return SendStatus::no_route;
  Outgoing& c = *outgoing_[peer];
  bool wake = false;
  std::vector<PeerId> down;
  SendStatus status = SendStatus::ok;
  {
    std::lock_guard lock(c.mutex);
    if (c.state == Outgoing::State::down && c.ever_up) {
      c.counters.errors.fetch_add(1, std::memory_order_relaxed);
      frame.reset();
      return SendStatus::error;
    }
    if (c.state == Outgoing::State::idle) start_connect(c);  // first use
    if (c.queue.full()) {
      c.want_ready.store(true, std::memory_order_relaxed);
      c.counters.would_blocks.fetch_add(1, std::memory_order_relaxed);
      return SendStatus::would_block;
    }
    // The application's transportMode (header flags) overrides the endpoint's mode, frame by frame.
    auto flags = static_cast<std::uint8_t>(frame.data()[frame_offset::flags]);
    bool coalesce = (flags & frame_flags::coalesce) != 0 ||
                    (settings_.throughput_mode && (flags & frame_flags::send_now) == 0);
    c.queued_bytes += frame.total_size();
    c.queue.push(std::move(frame));
    if (c.state != Outgoing::State::up || c.output_armed) return SendStatus::ok;  // the send thread writes it
    if (!coalesce || c.queued_bytes >= settings_.pack_bytes || c.queue.size() >= kMaxIovecs / 2) {
      std::string error;
      if (!flush(c, error)) {
        connection_lost(c, error, down);
        status = SendStatus::error;
      }
    } else if (!c.flush_pending) {
      c.flush_pending = true;
      c.flush_due = Clock::now() + settings_.pack_timeout;
      wake = true;
    }
  }
  for (PeerId id : down) host_.connection_changed(id, false, "write failed");
  if (wake) wake_send_thread();
  return status;
}

void TcpTransport::send_loop(std::stop_token stop) {
  epoll_event events[64];
  while (!stop.stop_requested()) {
    // Sleep until the next timed flush or reconnection attempt, at most 100 ms.
    auto now = Clock::now();
    auto next = now + std::chrono::milliseconds(100);
    std::size_t peers = outgoing_count_.load(std::memory_order_acquire);
    for (std::size_t i = 0; i < peers; ++i) {
      Outgoing& c = *outgoing_[i];
      std::lock_guard lock(c.mutex);
      if (c.flush_pending) next = std::min(next, c.flush_due);
      if (c.state == Outgoing::State::down && retries(c)) next = std::min(next, c.retry_at);
    }
    // Nanosecond timeout (epoll_pwait2): epoll_wait's milliseconds would stretch a 200 us packTimeout to 1 ms.
    auto wait = std::max<long long>(0, std::chrono::duration_cast<std::chrono::nanoseconds>(next - now).count());
    timespec timeout{static_cast<time_t>(wait / 1'000'000'000), static_cast<long>(wait % 1'000'000'000)};
    int ready = epoll_pwait2(send_epoll_, events, 64, &timeout, nullptr);
    for (int e = 0; e < ready; ++e) {
      if (events[e].data.ptr == nullptr) {
        drain_eventfd(send_wake_);
        continue;
      }
      Outgoing& c = *static_cast<Outgoing*>(events[e].data.ptr);
      std::uint32_t what = events[e].events;
      std::vector<PeerId> down;
      bool notify = false;
      {
        std::lock_guard lock(c.mutex);
        if (c.fd < 0) continue;
        if (c.state == Outgoing::State::connecting) {
          int error = 0;
          socklen_t length = sizeof error;
          getsockopt(c.fd, SOL_SOCKET, SO_ERROR, &error, &length);
          if (error == 0 && (what & EPOLLOUT) != 0) {
            on_connected(c);
          } else {
            connection_lost(c, "connect: " + errno_text(error != 0 ? error : ECONNREFUSED), down);
          }
        } else if ((what & (EPOLLERR | EPOLLHUP | EPOLLRDHUP | EPOLLIN)) != 0) {
          // Nobody sends to us on an outgoing connection: anything readable is the peer going away.
          connection_lost(c, (what & EPOLLERR) != 0 ? "socket error" : "closed by the peer", down);
        } else if ((what & EPOLLOUT) != 0) {
          std::string error;
          if (!flush(c, error)) connection_lost(c, error, down);
        }
        if (c.want_ready.load(std::memory_order_relaxed) && c.queue.size() <= c.queue.capacity() / 2) {
          c.want_ready.store(false, std::memory_order_relaxed);
          notify = true;
        }
      }
      for (PeerId id : down) host_.connection_changed(id, false, "connection lost");
      if (notify) host_.send_ready(c.id);
    }
    now = Clock::now();
    for (std::size_t i = 0; i < peers; ++i) {
      Outgoing& c = *outgoing_[i];
      std::vector<PeerId> down;
      bool notify = false;
      {
        std::lock_guard lock(c.mutex);
        if (c.flush_pending && now >= c.flush_due) {
          c.flush_pending = false;
          std::string error;
          if (c.state == Outgoing::State::up && !c.output_armed && !flush(c, error)) connection_lost(c, error, down);
        }
        if (c.state == Outgoing::State::down && retries(c) && now >= c.retry_at)
          start_connect(c);
        if (c.want_ready.load(std::memory_order_relaxed) && c.queue.size() <= c.queue.capacity() / 2) {
          c.want_ready.store(false, std::memory_order_relaxed);
          notify = true;
        }
      }
      for (PeerId id : down) host_.connection_changed(id, false, "connection lost");
      if (notify) host_.send_ready(c.id);
    }
  }
}

// ---- receive side ---------------------------------------------------------------------------------------

void TcpTransport::wake_receive_thread() noexcept {
  std::uint64_t one = 1;
  if (write(receive_wake_, &one, sizeof one) < 0) {
    // See wake_send_thread.
  }
}

void TcpTransport::accept_connections() {
  for (;;) {
    sockaddr_storage address{};
    socklen_t length = sizeof address;
    int fd = accept4(listen_fd_, reinterpret_cast<sockaddr*>(&address), &length, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK)
        host_.log(LogLevel::warning, "accept on " + local_.text() + ": " + errno_text(errno));
      return;
    }
    set_socket_options(fd, settings_, false);
    Incoming* c = nullptr;
    {
      std::lock_guard peers(peers_mutex_);
      c = &incoming_.emplace_back();
      c->id = next_incoming_id_++;
      c->fd = fd;
      c->remote = endpoint_text(address);
      c->reader = std::make_unique<FrameReader>(*receive_pool_, settings_.staging_bytes, settings_.copy_threshold,
                                                settings_.max_frame_size);
    }
    epoll_event event{};
    event.events = EPOLLIN | EPOLLRDHUP;
    event.data.ptr = c;
    epoll_ctl(receive_epoll_, EPOLL_CTL_ADD, fd, &event);
    accepted_.fetch_add(1, std::memory_order_relaxed);
    host_.connection_changed(c->id, true, "accepted from " + c->remote);
  }
}

void TcpTransport::close_incoming(Incoming& c, const std::string& reason, Ending ending) {
  if (c.fd < 0) return;
  epoll_ctl(receive_epoll_, EPOLL_CTL_DEL, c.fd, nullptr);
  close(c.fd);
  c.fd = -1;
  c.reader.reset();  // a frame half received goes back to the pool with the staging buffer
  c.pending.data.reset();
  c.has_pending = false;
  if (ending == Ending::bad) {
    bad_streams_.fetch_add(1, std::memory_order_relaxed);
    host_.log(LogLevel::warning, "closed the connection from " + c.remote + ": " + reason);
  } else if (ending == Ending::truncated) {
    truncated_frames_.fetch_add(1, std::memory_order_relaxed);
    host_.log(LogLevel::warning, "connection from " + c.remote + " ended in the middle of a frame: " + reason);
  } else {
    closed_by_peer_.fetch_add(1, std::memory_order_relaxed);
    host_.log(LogLevel::info, "connection from " + c.remote + " ended: " + reason);
  }
  host_.connection_changed(c.id, false, reason);
}

bool TcpTransport::deliver(Incoming& c, Frame& frame) {
  std::size_t bytes = frame.header.total_length;
  Tid target = frame.header.target;
  switch (host_.deliver(std::move(frame), c.id)) {
    case DeliverStatus::accepted:
      c.counters.frames.fetch_add(1, std::memory_order_relaxed);
      c.counters.bytes.fetch_add(bytes, std::memory_order_relaxed);
      return true;
    case DeliverStatus::busy:
      // The target's queue is full: hold the frame, stop reading (TCP pushes back to the sender).
      if (&frame != &c.pending) c.pending = std::move(frame);
      c.has_pending = true;
      c.paused = true;
      delivery_waits_.fetch_add(1, std::memory_order_relaxed);
      {
        epoll_event event{};
        event.events = 0;
        event.data.ptr = &c;
        epoll_ctl(receive_epoll_, EPOLL_CTL_MOD, c.fd, &event);
      }
      return false;
    case DeliverStatus::rejected:
      close_incoming(c, "frame for application " + std::to_string(target) + ", which is not here", Ending::bad);
      return false;
  }
  return false;
}

void TcpTransport::serve(Incoming& c) {
  if (c.fd < 0 || c.paused) return;
  if (c.has_pending) {
    c.has_pending = false;
    if (!deliver(c, c.pending)) return;
  }
  int reads = 0;
  for (;;) {
    Frame frame;
    switch (c.reader->next(frame)) {
      case FrameReader::Result::frame:
        if (!deliver(c, frame)) return;
        continue;
      case FrameReader::Result::no_memory: {
        // Back-pressure: stop reading until the receive pool has blocks again.
        receive_pool_waits_.fetch_add(1, std::memory_order_relaxed);
        c.paused = true;
        epoll_event event{};
        event.events = 0;
        event.data.ptr = &c;
        epoll_ctl(receive_epoll_, EPOLL_CTL_MOD, c.fd, &event);
        return;
      }
      case FrameReader::Result::bad_frame:
        close_incoming(c, "bad frame: " + c.reader->error(), Ending::bad);
        return;
      case FrameReader::Result::need_more:
        break;
    }
    if (reads++ == kReadsPerWakeup) return;  // level-triggered: epoll reports the rest
    iovec vectors[64];
    int count = c.reader->read_target(vectors, 64);
    ssize_t got = readv(c.fd, vectors, count);
    if (got > 0) {
      c.reader->advance(static_cast<std::size_t>(got));
      continue;
    }
    if (got == 0) {
      close_incoming(c, "closed by the peer", c.reader->mid_frame() ? Ending::truncated : Ending::normal);
      return;
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return;
    close_incoming(c, "read: " + errno_text(errno), c.reader->mid_frame() ? Ending::truncated : Ending::normal);
    return;
  }
}

void TcpTransport::resume_paused() {
  for (Incoming& c : incoming_) {
    if (!c.paused || c.fd < 0) continue;
    c.paused = false;
    epoll_event event{};
    event.events = EPOLLIN | EPOLLRDHUP;
    event.data.ptr = &c;
    epoll_ctl(receive_epoll_, EPOLL_CTL_MOD, c.fd, &event);
    serve(c);
  }
}

void TcpTransport::receive_loop(std::stop_token stop) {
  epoll_event events[64];
  while (!stop.stop_requested()) {
    int ready = epoll_wait(receive_epoll_, events, 64, 100);
    for (int e = 0; e < ready; ++e) {
      void* tag = events[e].data.ptr;
      if (tag == nullptr) {
        drain_eventfd(receive_wake_);
        if (resume_requested_.exchange(false, std::memory_order_acq_rel)) resume_paused();
        continue;
      }
      if (tag == &listen_fd_) {
        accept_connections();
        continue;
      }
      Incoming& c = *static_cast<Incoming*>(tag);
      if (c.paused && (events[e].events & (EPOLLERR | EPOLLHUP)) != 0) {
        close_incoming(c, "socket error while paused", Ending::truncated);
        continue;
      }
      serve(c);
    }
    // Pauses can also end without a wake-up having been seen (it raced with the pause): look again.
    if (resume_requested_.exchange(false, std::memory_order_acq_rel)) resume_paused();
    // Forget closed connections (not while events of this round still pointed at them).
    std::lock_guard peers(peers_mutex_);
    for (auto it = incoming_.begin(); it != incoming_.end();) {
      if (it->fd < 0) {
        retired_frames_received_ += it->counters.frames.load(std::memory_order_relaxed);
        retired_bytes_received_ += it->counters.bytes.load(std::memory_order_relaxed);
        it = incoming_.erase(it);
      } else {
        ++it;
      }
    }
  }
}

// ---- reports --------------------------------------------------------------------------------------------

void TcpTransport::report(MetricSink& sink) const {
  TransportTotals totals;
  totals.frames_received = retired_frames_received_;
  totals.bytes_received = retired_bytes_received_;
  {
    std::lock_guard peers(peers_mutex_);
    for (const auto& c : outgoing_) totals.add_outgoing(c->counters);
    for (const Incoming& c : incoming_) {
      totals.add_incoming(c.counters);
      totals.incoming_connections += c.fd >= 0 ? 1 : 0;
    }
  }
  totals.connections_accepted = accepted_.load();
  totals.bad_streams = bad_streams_.load();
  totals.closed_by_peer = closed_by_peer_.load();
  totals.truncated_frames = truncated_frames_.load();
  totals.receive_pool_waits = receive_pool_waits_.load();
  totals.delivery_waits = delivery_waits_.load();
  report_totals(sink, totals);
  sink.gauge("mode_throughput", settings_.throughput_mode ? 1 : 0, "1 in throughput mode, 0 in latency mode");
}

std::vector<ConnectionInfo> TcpTransport::connections() const {
  std::vector<ConnectionInfo> list;
  std::lock_guard peers(peers_mutex_);
  for (const auto& c : outgoing_) {
    ConnectionInfo info;
    info.peer = c->id;
    info.remote = c->remote.hostname + ":" + std::to_string(c->remote.port) + " (out)";
    info.outgoing = true;
    {
      std::lock_guard lock(c->mutex);
      info.up = c->state == Outgoing::State::up;
      info.metrics.push_back({"queued_frames", Metric::Kind::gauge, static_cast<double>(c->queue.size()), "frames waiting", {}});
    }
    add_outgoing_metrics(info.metrics, c->counters);
    list.push_back(std::move(info));
  }
  for (const Incoming& c : incoming_) {
    if (c.fd < 0) continue;
    ConnectionInfo info;
    info.peer = c.id;
    info.remote = c.remote + " (in)";
    info.up = true;
    add_incoming_metrics(info.metrics, c.counters);
    list.push_back(std::move(info));
  }
  return list;
}

}  // namespace daqx::pttcp
