// ptofi implementation: fabric set-up, outgoing connections with credit-paced sends straight from pool
// blocks, incoming connections with pre-posted receive buffers chained into frames, and teardown that
// recycles one connection's blocks without touching the others.
#include "ofi_transport.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <rdma/fi_errno.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace daqx::ptofi {
namespace {

using Clock = std::chrono::steady_clock;
constexpr std::size_t kCompletionQueueSize = 8192;
constexpr std::size_t kEventQueueSize = 256;
constexpr int kCompletionBatch = 32;
constexpr int kReadRounds = 8;  // batches per wake-up before the thread looks at events and timers
constexpr std::size_t kCreditBufferSize = 64;

std::string address_text(const void* address) {
  if (address == nullptr) return "?";
  const auto* generic = static_cast<const sockaddr*>(address);
  char host[INET6_ADDRSTRLEN] = "?";
  unsigned port = 0;
  if (generic->sa_family == AF_INET) {
    const auto* in = static_cast<const sockaddr_in*>(address);
    inet_ntop(AF_INET, &in->sin_addr, host, sizeof host);
    port = ntohs(in->sin_port);
  } else if (generic->sa_family == AF_INET6) {
    const auto* in6 = static_cast<const sockaddr_in6*>(address);
    inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof host);
    port = ntohs(in6->sin6_port);
  } else {
    return "?";
  }
  return std::string(host) + ":" + std::to_string(port);
}

void drain_eventfd(int fd) {
  std::uint64_t value = 0;
  while (read(fd, &value, sizeof value) > 0) {
  }
}

// A connection-management event with room for connection data we do not use (the entry ends in a
// flexible array, so it cannot be a member followed by others).
union CmEvent {
  fi_eq_cm_entry entry;
  std::uint8_t space[sizeof(fi_eq_cm_entry) + 256];
};

// One round of a completion thread: up to kReadRounds batches of completions, then every connection
// event. Returns whether there was anything, so the thread sleeps only when there was not.
template <typename Completion, typename CompletionError, typename Event, typename EventError>
bool drain_queues(fid_cq* cq, fid_eq* eq, Completion&& completion, CompletionError&& completion_error, Event&& event,
                  EventError&& event_error) {
  bool worked = false;
  fi_cq_msg_entry entries[kCompletionBatch];
  for (int round = 0; round < kReadRounds; ++round) {
    ssize_t count = fi_cq_read(cq, entries, kCompletionBatch);
    if (count > 0) {
      for (ssize_t i = 0; i < count; ++i) completion(entries[i]);
      worked = true;
      if (count < kCompletionBatch) break;
      continue;
    }
    if (count == -FI_EAVAIL) {
      fi_cq_err_entry error{};
      if (fi_cq_readerr(cq, &error, 0) > 0) completion_error(error);
      worked = true;
      continue;
    }
    break;
  }
  for (;;) {
    CmEvent entry{};
    std::uint32_t kind = 0;
    ssize_t got = fi_eq_read(eq, &kind, &entry.entry, sizeof entry, 0);
    if (got > 0) {
      event(kind, entry.entry);
      worked = true;
      continue;
    }
    if (got == -FI_EAVAIL) {
      fi_eq_err_entry error{};
      if (fi_eq_readerr(eq, &error, 0) > 0) event_error(error);
      worked = true;
      continue;
    }
    return worked;
  }
}

std::string completion_error_text(fid_cq* cq, const fi_cq_err_entry& error) {
  char buffer[256] = "";
  std::string text = fabric_error(error.err);
  if (error.prov_errno == 0) return text;
  const char* detail = fi_cq_strerror(cq, error.prov_errno, error.err_data, buffer, sizeof buffer);
  if (detail != nullptr && detail[0] != '\0') text.append(" (").append(detail).append(")");
  return text;
}

std::string event_error_text(fid_eq* eq, const fi_eq_err_entry& error) {
  char buffer[256] = "";
  std::string text = fabric_error(error.err);
  if (error.prov_errno == 0) return text;
  const char* detail = fi_eq_strerror(eq, error.prov_errno, error.err_data, buffer, sizeof buffer);
  if (detail != nullptr && detail[0] != '\0') text.append(" (").append(detail).append(")");
  return text;
}

}  // namespace

// ---- parameters -----------------------------------------------------------------------------------------

std::vector<ParamSpec> parameter_specs() {
  return {
      {"provider", ParamType::string, "tcp", "",
       "libfabric provider for FI_EP_MSG endpoints: tcp (any network), verbs (InfiniBand, RoCE, iWARP), ...", {}, {}},
      {"waitMode", ParamType::string, "epoll", "",
       "epoll: completion threads sleep on the queues' file descriptors; busy: they poll without sleeping", {}, {}},
      {"connectAt", ParamType::string, "start", "", "start: connect to peers when the executive starts; first-use: on the first frame", {}, {}},
      {"recvBufferSize", ParamType::unsigned_integer, "131072", "bytes",
       "size of each pre-posted receive buffer; larger frames arrive as chains of such buffers", 4096, 64.0 * 1024 * 1024},
      {"recvDepth", ParamType::unsigned_integer, "64", "buffers",
       "receive buffers kept posted per incoming connection (the sender's credits)", 2, 16384},
      {"recvPoolSize", ParamType::unsigned_integer, "268435456", "bytes",
       "the most memory the receive pool may grow to", 1 << 20, 64.0 * 1024 * 1024 * 1024},
      {"sendQueue", ParamType::unsigned_integer, "4096", "frames",
       "frames queued per connection before post() says would-block", 16, 1 << 20},
      {"txDepth", ParamType::unsigned_integer, "128", "messages",
       "messages in flight per outgoing connection (capped by the provider's transmit queue)", 1, 65536},
      {"registerMemory", ParamType::string, "auto", "",
       "auto: register pools with the domain when the provider asks for it (FI_MR_LOCAL); always; never", {}, {}},
      {"reconnectMin", ParamType::unsigned_integer, "50", "ms", "first delay before reconnecting to a peer", 1, 60000},
      {"reconnectMax", ParamType::unsigned_integer, "2000", "ms", "longest delay between reconnection attempts", 1, 600000},
  };
}

Settings Settings::from(const ParamSet& params, std::uint32_t max_frame_size) {
  Settings s;
  s.provider = params.string("provider");
  if (s.provider.empty()) throw std::invalid_argument("parameter provider is empty: name a libfabric provider (tcp, verbs, ...)");
  const std::string& wait_mode = params.string("waitMode");
  if (wait_mode != "epoll" && wait_mode != "busy")
    throw std::invalid_argument("parameter waitMode is '" + wait_mode + "': expected epoll or busy");
  s.busy_poll = wait_mode == "busy";
  const std::string& connect_at = params.string("connectAt");
  if (connect_at != "start" && connect_at != "first-use")
    throw std::invalid_argument("parameter connectAt is '" + connect_at + "': expected start or first-use");
  s.connect_at_start = connect_at == "start";
  const std::string& registration = params.string("registerMemory");
  if (registration == "auto") {
    s.registration = Registration::automatic;
  } else if (registration == "always") {
    s.registration = Registration::always;
  } else if (registration == "never") {
    s.registration = Registration::never;
  } else {
    throw std::invalid_argument("parameter registerMemory is '" + registration + "': expected auto, always or never");
  }
  s.recv_buffer_size = params.unsigned_integer("recvBufferSize");
  s.recv_depth = params.unsigned_integer("recvDepth");
  s.recv_pool_bytes = params.unsigned_integer("recvPoolSize");
  if (s.recv_pool_bytes < s.recv_buffer_size * s.recv_depth)
    throw std::invalid_argument("parameter recvPoolSize (" + std::to_string(s.recv_pool_bytes) +
                                " B) cannot hold recvDepth buffers of recvBufferSize for even one connection");
  s.send_queue = params.unsigned_integer("sendQueue");
  s.tx_depth = params.unsigned_integer("txDepth");
  s.reconnect_min = std::chrono::milliseconds(params.unsigned_integer("reconnectMin"));
  s.reconnect_max = std::chrono::milliseconds(std::max(params.unsigned_integer("reconnectMax"), params.unsigned_integer("reconnectMin")));
  s.max_frame_size = max_frame_size;
  return s;
}

// ---- life cycle -----------------------------------------------------------------------------------------

OfiTransport::OfiTransport(TransportHost& host)
    : host_(host), settings_(Settings::from(host.params(), host.max_frame_size())) {
  // Fail at configure time, naming what the provider lacks, rather than at the first connection.
  find_provider(settings_.provider, nullptr, nullptr, 0);
  std::size_t chunk = std::max<std::size_t>(settings_.recv_buffer_size, std::size_t{4} << 20);
  mem::PoolConfig receive;
  receive.classes.push_back({settings_.recv_buffer_size, chunk / settings_.recv_buffer_size, 1,
                             std::max<std::size_t>(1, settings_.recv_pool_bytes / chunk)});
  receive_pool_ = &host_.make_pool("recv", receive);
  mem::PoolConfig credit;
  credit.classes.push_back({kCreditBufferSize, 1024, 1, 64});
  credit_pool_ = &host_.make_pool("credit", credit);
  receive_pool_->on_available([this] {
    resume_requested_.store(true, std::memory_order_release);
    wake(receive_waiter_);
  });
  host_.on_deliver_ready([this] {
    resume_requested_.store(true, std::memory_order_release);
    wake(receive_waiter_);
  });
  outgoing_.reserve(kMaxPeers);
}

OfiTransport::~OfiTransport() { stop(); }

void OfiTransport::open_fabric(const fi_info& info) {
  std::lock_guard lock(open_mutex_);
  if (fabric_) return;
  auto check = [](int error, const std::string& what) {
    if (error != 0) throw std::runtime_error(what + ": " + fabric_error(error));
  };
  fid_fabric* fabric = nullptr;
  check(fi_fabric(info.fabric_attr, &fabric, nullptr), "fi_fabric");
  fabric_.reset(fabric);
  fid_domain* domain = nullptr;
  check(fi_domain(fabric_.get(), const_cast<fi_info*>(&info), &domain, nullptr), "fi_domain");
  domain_.reset(domain);

  // Both wait objects are checked here, at configure time, so that a provider without FD wait objects
  // is named before the run rather than found out by a hung thread.
  fi_wait_obj wait_object = settings_.busy_poll ? FI_WAIT_NONE : FI_WAIT_FD;
  std::string wait_hint = settings_.busy_poll ? "" : " (waitMode=epoll needs FI_WAIT_FD wait objects; waitMode=busy does not)";
  for (auto* eq : {&send_eq_, &receive_eq_}) {
    fi_eq_attr attributes{};
    attributes.size = kEventQueueSize;
    attributes.wait_obj = wait_object;
    fid_eq* opened = nullptr;
    check(fi_eq_open(fabric_.get(), &attributes, &opened, nullptr),
          "libfabric provider '" + settings_.provider + "' cannot open an event queue" + wait_hint);
    eq->reset(opened);
  }
  for (auto* cq : {&send_cq_, &receive_cq_}) {
    fi_cq_attr attributes{};
    attributes.size = kCompletionQueueSize;
    attributes.format = FI_CQ_FORMAT_MSG;
    attributes.wait_obj = wait_object;
    fid_cq* opened = nullptr;
    check(fi_cq_open(domain_.get(), &attributes, &opened, nullptr),
          "libfabric provider '" + settings_.provider + "' cannot open a completion queue" + wait_hint);
    cq->reset(opened);
  }

  iov_limit_ = std::clamp<std::size_t>(info.tx_attr->iov_limit, 1, MessagePieces::kMaxPieces);
  tx_depth_ = std::max<std::size_t>(1, std::min(settings_.tx_depth, info.tx_attr->size));
  recv_depth_ = std::max<std::size_t>(2, std::min(settings_.recv_depth, info.rx_attr->size));
  if (settings_.recv_buffer_size > info.ep_attr->max_msg_size)
    throw std::runtime_error("recvBufferSize " + std::to_string(settings_.recv_buffer_size) + " B exceeds provider '" +
                             settings_.provider + "''s largest message (" + std::to_string(info.ep_attr->max_msg_size) + " B)");

  bool register_memory = settings_.registration == Settings::Registration::always ||
                         (settings_.registration == Settings::Registration::automatic && needs_local_registration(info));
  if (register_memory) {
    registrar_ = std::make_unique<MemoryRegistrar>(domain_.get());
    registrar_slot_ = host_.register_memory(*registrar_);
  }
  host_.log(LogLevel::info, "provider " + std::string(info.fabric_attr->prov_name) + ", fabric " +
                                std::string(info.fabric_attr->name != nullptr ? info.fabric_attr->name : "?") + ", domain " +
                                std::string(info.domain_attr->name != nullptr ? info.domain_attr->name : "?") +
                                ", memory registration " + (register_memory ? "on" : "off") + ", " +
                                std::to_string(iov_limit_) + " pieces per message, " + std::to_string(tx_depth_) +
                                " messages in flight, " + std::to_string(recv_depth_) + " receive buffers per connection");

  if (!settings_.busy_poll) {
    make_waiter(send_waiter_, send_cq_.get(), send_eq_.get());
    make_waiter(receive_waiter_, receive_cq_.get(), receive_eq_.get());
  }
  send_thread_ = host_.start_thread("send", [this](std::stop_token stop) { send_loop(stop); });
  receive_thread_ = host_.start_thread("recv", [this](std::stop_token stop) { receive_loop(stop); });
}

void OfiTransport::make_waiter(Waiter& waiter, fid_cq* cq, fid_eq* eq) {
  waiter.epoll = epoll_create1(EPOLL_CLOEXEC);
  waiter.wake = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (waiter.epoll < 0 || waiter.wake < 0) throw std::runtime_error(std::string("epoll/eventfd: ") + std::strerror(errno));
  auto add = [&](int fd) {
    epoll_event event{};
    event.events = EPOLLIN;
    event.data.fd = fd;
    if (epoll_ctl(waiter.epoll, EPOLL_CTL_ADD, fd, &event) != 0)
      throw std::runtime_error(std::string("epoll_ctl: ") + std::strerror(errno));
  };
  for (fid* object : {&cq->fid, &eq->fid}) {
    int fd = -1;
    int error = fi_control(object, FI_GETWAIT, &fd);
    if (error != 0 || fd < 0)
      throw std::runtime_error("libfabric provider '" + settings_.provider +
                               "' gives no file descriptor to wait on (FI_GETWAIT: " + fabric_error(error) +
                               "): set waitMode=busy");
    add(fd);
  }
  add(waiter.wake);
}

void OfiTransport::wake(Waiter& waiter) noexcept {
  if (waiter.wake < 0) return;  // busy polling: the thread looks at its flags on every round
  std::uint64_t one = 1;
  if (write(waiter.wake, &one, sizeof one) < 0) {
    // Only a counter overflow after 2^64 wake-ups could fail: nothing to do.
  }
}

void OfiTransport::wait(Waiter& waiter, fid_cq* cq, fid_eq* eq, std::chrono::milliseconds limit) {
  fid* objects[2] = {&cq->fid, &eq->fid};
  // fi_trywait: the provider may have work it can only find by being polled; sleeping is safe only when
  // it says so.
  int ready = fi_trywait(fabric_.get(), objects, 2);
  if (ready == -FI_EAGAIN) return;
  int timeout = ready == 0 ? static_cast<int>(std::max<long long>(limit.count(), 0)) : 1;
  epoll_event events[4];
  int count = epoll_wait(waiter.epoll, events, 4, timeout);
  for (int i = 0; i < count; ++i)
    if (events[i].data.fd == waiter.wake) drain_eventfd(waiter.wake);
}

void OfiTransport::listen(const EndpointAddress& local) {
  local_ = local;
  std::string service = std::to_string(local.port);
  InfoPtr info = find_provider(settings_.provider, local.hostname.c_str(), service.c_str(), FI_SOURCE);
  open_fabric(*info);
  fid_pep* passive = nullptr;
  int error = fi_passive_ep(fabric_.get(), info.get(), &passive, &passive_marker_);
  if (error != 0) throw std::runtime_error("fi_passive_ep on " + local.text() + ": " + fabric_error(error));
  passive_.reset(passive);
  error = fi_pep_bind(passive_.get(), &receive_eq_->fid, 0);
  if (error != 0) throw std::runtime_error("fi_pep_bind: " + fabric_error(error));
  error = fi_listen(passive_.get());
  if (error != 0) throw std::runtime_error("fi_listen on " + local.text() + ": " + fabric_error(error));
  wake(receive_waiter_);
}

PeerId OfiTransport::connect(const EndpointAddress& remote) {
  std::string service = std::to_string(remote.port);
  InfoPtr info = find_provider(settings_.provider, remote.hostname.c_str(), service.c_str(), 0);
  open_fabric(*info);  // when nothing listens here (a context that only sends)
  Outgoing* c = nullptr;
  {
    std::lock_guard peers(peers_mutex_);
    if (outgoing_.size() >= kMaxPeers) throw std::runtime_error("more than " + std::to_string(kMaxPeers) + " peers");
    auto connection = std::make_unique<Outgoing>(settings_.send_queue);
    connection->id = static_cast<PeerId>(outgoing_.size());
    connection->remote = remote;
    connection->info = std::move(info);
    c = connection.get();
    outgoing_.push_back(std::move(connection));
    outgoing_count_.store(outgoing_.size(), std::memory_order_release);
  }
  if (settings_.connect_at_start) {
    std::lock_guard lock(c->mutex);
    c->connect_requested = true;
    send_attention_.store(true, std::memory_order_release);
    wake(send_waiter_);
  }
  return c->id;
}

void OfiTransport::open_connections() {
  std::size_t peers = outgoing_count_.load(std::memory_order_acquire);
  for (std::size_t i = 0; i < peers; ++i) {
    Outgoing& c = *outgoing_[i];
    std::lock_guard lock(c.mutex);
    // Not used yet: as the first frame would. Never up and refused (with first-use nothing retries it): again,
    // once its backoff has passed, so a later connect command reaches a peer that was not listening before.
    if (c.state == Outgoing::State::idle || (c.state == Outgoing::State::down && !c.ever_up)) c.connect_requested = true;
  }
  send_attention_.store(true, std::memory_order_release);
  wake(send_waiter_);
}

void OfiTransport::stop() {
  if (stopped_.exchange(true)) return;
  for (auto* thread : {&send_thread_, &receive_thread_}) {
    if (!thread->joinable()) continue;
    thread->request_stop();
    wake(send_waiter_);
    wake(receive_waiter_);
    thread->join();
  }
  {
    std::lock_guard peers(peers_mutex_);
    for (auto& c : outgoing_) {
      std::lock_guard lock(c->mutex);
      c->queue.clear();  // every queued block goes back
      c->cursor = SendCursor{};
      c->state = Outgoing::State::down;
      c->link = nullptr;
    }
    for (auto& link : links_) {
      if (link->endpoint != nullptr) fi_close(&link->endpoint->fid);
      link->endpoint = nullptr;
      link->closed = true;
      for (SendOp& op : link->ops) op.frame.reset();
      for (BufferOp& op : link->credit_buffers) op.buffer.reset();
    }
    for (auto& c : incoming_) {
      if (c->endpoint != nullptr) fi_close(&c->endpoint->fid);
      c->endpoint = nullptr;
      c->closed = true;
      for (BufferOp& op : c->buffers) op.buffer.reset();
      for (BufferOp& op : c->credit_sends) op.buffer.reset();
      c->assembling.data.reset();
      c->pending.data.reset();
    }
  }
  passive_.reset();
  // Registrations belong to the domain: they go before it does.
  if (registrar_slot_ != kNoRegistration) host_.deregister_memory(registrar_slot_);
  registrar_slot_ = kNoRegistration;
  send_cq_.reset();
  receive_cq_.reset();
  send_eq_.reset();
  receive_eq_.reset();
  domain_.reset();
  fabric_.reset();
  for (Waiter* waiter : {&send_waiter_, &receive_waiter_}) {
    if (waiter->epoll >= 0) close(waiter->epoll);
    if (waiter->wake >= 0) close(waiter->wake);
    waiter->epoll = waiter->wake = -1;
  }
}

fid_ep* OfiTransport::make_endpoint(fi_info* info, void* context, fid_eq* eq, fid_cq* cq, std::string& error) {
  fid_ep* endpoint = nullptr;
  int result = fi_endpoint(domain_.get(), info, &endpoint, context);
  if (result != 0) {
    error = "fi_endpoint: " + fabric_error(result);
    return nullptr;
  }
  result = fi_ep_bind(endpoint, &eq->fid, 0);
  if (result == 0) result = fi_ep_bind(endpoint, &cq->fid, FI_TRANSMIT | FI_RECV);
  if (result == 0) result = fi_enable(endpoint);
  if (result != 0) {
    error = "binding or enabling an endpoint: " + fabric_error(result);
    fi_close(&endpoint->fid);
    return nullptr;
  }
  return endpoint;
}

// ---- send side ------------------------------------------------------------------------------------------

SendStatus OfiTransport::post(PeerId peer, mem::Ref& frame) noexcept {
  if (stopped_.load(std::memory_order_relaxed) || peer >= outgoing_count_.load(std::memory_order_acquire))
    return SendStatus::no_route;
  Outgoing& c = *outgoing_[peer];
  std::lock_guard lock(c.mutex);
  if (c.state == Outgoing::State::down && c.ever_up) {
    c.counters.errors.fetch_add(1, std::memory_order_relaxed);
    frame.reset();
    return SendStatus::error;
  }
  if (c.state == Outgoing::State::idle && !c.connect_requested) {  // first use
    c.connect_requested = true;
    send_attention_.store(true, std::memory_order_release);
    wake(send_waiter_);
  }
  if (c.queue.full()) {
    c.want_ready.store(true, std::memory_order_relaxed);
    c.counters.would_blocks.fetch_add(1, std::memory_order_relaxed);
    return SendStatus::would_block;
  }
  c.queue.push(std::move(frame));
  pump(c);
  return SendStatus::ok;
}

void OfiTransport::pump(Outgoing& c) noexcept {
  SendLink* link = c.link;
  if (link == nullptr || !link->connected || link->closed || !link->failure.empty() || !link->credits.ready()) return;
  while (!c.queue.empty()) {
    if (link->credits.available() == 0) {
      if (!c.waiting_for_credits) c.credit_waits.fetch_add(1, std::memory_order_relaxed);
      c.waiting_for_credits = true;
      return;
    }
    if (link->ops_posted - link->ops_retired >= link->ops.size()) return;  // a completion pumps again
    MessagePieces pieces;
    SendCursor cursor = c.cursor;
    bool last = next_message(c.queue.front(), cursor, link->credits.buffer_size(), iov_limit_, registrar_slot_, pieces);
    SendOp& op = link->ops[link->ops_posted % link->ops.size()];
    ssize_t result = fi_sendv(link->endpoint, pieces.iov, pieces.descriptors, pieces.count, 0, &op.context.provider);
    if (result == -FI_EAGAIN) {
      // The provider's queue is full. Messages are in flight (their completions pump again) unless the
      // provider needs to be polled first: the send thread does that and retries.
      send_attention_.store(true, std::memory_order_release);
      wake(send_waiter_);
      return;
    }
    if (result != 0) {
      link->failure = "fi_sendv: " + fabric_error(static_cast<int>(result));
      send_attention_.store(true, std::memory_order_release);
      wake(send_waiter_);
      return;
    }
    c.waiting_for_credits = false;
    op.done = false;
    if (last) {
      op.frame_bytes = c.queue.front().total_size();
      op.frame = c.queue.take_front();
    }
    c.cursor = cursor;
    ++link->ops_posted;
    link->credits.consume();
  }
}

void OfiTransport::post_credit_receive(SendLink& link, BufferOp& op, std::string& error) {
  if (!op.buffer) op.buffer = credit_pool_->allocate(kCreditBufferSize);
  if (!op.buffer) {
    error = "no credit buffer";
    return;
  }
  void* descriptor = registrar_slot_ == kNoRegistration ? nullptr : op.buffer.head()->key(registrar_slot_).descriptor;
  ssize_t result = fi_recv(link.endpoint, op.buffer.data(), op.buffer.size(), descriptor, 0, &op.context.provider);
  if (result != 0) error = "fi_recv: " + fabric_error(static_cast<int>(result));
}

void OfiTransport::start_connect(Outgoing& c) {
  c.connect_requested = false;
  auto link = std::make_unique<SendLink>();
  link->owner = &c;
  link->ops.resize(tx_depth_);
  for (std::size_t i = 0; i < link->ops.size(); ++i) {
    link->ops[i].context.kind = OpKind::data_send;
    link->ops[i].context.index = static_cast<std::uint32_t>(i);
    link->ops[i].context.link = link.get();
  }
  link->credit_buffers.resize(kCreditBuffers);
  for (std::size_t i = 0; i < link->credit_buffers.size(); ++i) {
    link->credit_buffers[i].context.kind = OpKind::credit_receive;
    link->credit_buffers[i].context.index = static_cast<std::uint32_t>(i);
    link->credit_buffers[i].context.link = link.get();
  }
  std::string error;
  link->endpoint = make_endpoint(c.info.get(), link.get(), send_eq_.get(), send_cq_.get(), error);
  if (link->endpoint != nullptr) {
    // Somewhere for the receiver's first credit message to land before the connection is even up.
    for (BufferOp& op : link->credit_buffers)
      if (error.empty()) post_credit_receive(*link, op, error);
    if (error.empty()) {
      int result = fi_connect(link->endpoint, c.info->dest_addr, nullptr, 0);
      if (result != 0) error = "fi_connect: " + fabric_error(result);
    }
  }
  SendLink* raw = link.get();
  links_.push_back(std::move(link));
  c.link = raw;
  if (!error.empty()) {
    bool went_down = false;
    teardown(c, error, went_down);
    return;
  }
  c.state = Outgoing::State::connecting;
}

void OfiTransport::teardown(Outgoing& c, const std::string& reason, bool& went_down) {
  SendLink* link = c.link;
  bool was_up = c.state == Outgoing::State::up;
  if (link != nullptr && !link->closed) {
    link->closed = true;
    // Closing the endpoint stops the provider touching our buffers and drops its pending events.
    if (link->endpoint != nullptr) fi_close(&link->endpoint->fid);
    link->endpoint = nullptr;
    std::size_t in_flight_frames = 0;
    for (SendOp& op : link->ops)
      if (op.frame) {
        ++in_flight_frames;
        op.frame.reset();
      }
    for (BufferOp& op : link->credit_buffers) op.buffer.reset();
    if (was_up) c.counters.errors.fetch_add(1 + in_flight_frames, std::memory_order_relaxed);
  }
  c.link = nullptr;
  // What was not sent is lost with the connection, counted, whether or not it ever came up (frames posted on
  // first use to a peer that does not listen yet); its blocks go back.
  c.counters.errors.fetch_add(c.queue.size(), std::memory_order_relaxed);
  c.queue.clear();
  c.cursor = SendCursor{};
  c.waiting_for_credits = false;
  c.state = Outgoing::State::down;
  c.backoff = std::clamp(c.backoff * 2, settings_.reconnect_min, settings_.reconnect_max);
  c.retry_at = Clock::now() + c.backoff;
  went_down = was_up;
  host_.log(was_up ? LogLevel::warning : LogLevel::debug, "connection to " + c.remote.text() + " lost: " + reason);
}

void OfiTransport::on_send_completion(OpContext& op) {
  auto* link = static_cast<SendLink*>(op.link);
  Outgoing& c = *link->owner;
  bool went_down = false;
  bool notify = false;
  {
    std::lock_guard lock(c.mutex);
    if (link->closed) return;  // a completion of an endpoint torn down: its blocks went back then
    if (op.kind == OpKind::credit_receive) {
      BufferOp& buffer = link->credit_buffers[op.index];
      CreditMessage message;
      if (!decode_credit(buffer.buffer.data(), buffer.length, message)) {
        teardown(c, "a malformed credit message from the receiver", went_down);
      } else {
        link->credits.grant(message);
        std::string error;
        post_credit_receive(*link, buffer, error);
        if (!error.empty()) teardown(c, error, went_down);
      }
    } else {
      link->ops[op.index].done = true;
      // Retire in posting order: a frame's blocks go back only when every message before them is sent.
      while (link->ops_retired < link->ops_posted) {
        SendOp& oldest = link->ops[link->ops_retired % link->ops.size()];
        if (!oldest.done) break;
        oldest.done = false;
        if (oldest.frame) {
          c.counters.frames.fetch_add(1, std::memory_order_relaxed);
          c.counters.bytes.fetch_add(oldest.frame_bytes, std::memory_order_relaxed);
          oldest.frame.reset();
        }
        ++link->ops_retired;
      }
    }
    if (c.link == link) pump(c);
    if (c.want_ready.load(std::memory_order_relaxed) && c.queue.size() <= c.queue.capacity() / 2) {
      c.want_ready.store(false, std::memory_order_relaxed);
      notify = true;
    }
  }
  if (went_down) host_.connection_changed(c.id, false, "connection lost");
  if (notify) host_.send_ready(c.id);
}

void OfiTransport::on_send_error(const fi_cq_err_entry& error) {
  if (error.op_context == nullptr) return;
  auto& op = *static_cast<OpContext*>(error.op_context);
  auto* link = static_cast<SendLink*>(op.link);
  Outgoing& c = *link->owner;
  bool went_down = false;
  {
    std::lock_guard lock(c.mutex);
    if (link->closed || c.link != link) return;
    if (error.err == FI_ECANCELED) {  // the provider flushed what was posted: the connection is gone
      teardown(c, "closed by the peer", went_down);
    } else {
      completion_errors_.fetch_add(1, std::memory_order_relaxed);
      teardown(c, (op.kind == OpKind::credit_receive ? "credit receive failed: " : "send failed: ") +
                      completion_error_text(send_cq_.get(), error),
               went_down);
    }
  }
  if (went_down) host_.connection_changed(c.id, false, "connection lost");
}

void OfiTransport::on_send_event(std::uint32_t event, fid_t fid) {
  if (fid == nullptr || fid->context == nullptr) return;
  auto* link = static_cast<SendLink*>(fid->context);
  Outgoing& c = *link->owner;
  bool came_up = false, went_down = false;
  {
    std::lock_guard lock(c.mutex);
    if (link->closed || c.link != link) return;
    if (event == FI_CONNECTED) {
      link->connected = true;
      if (c.ever_up) c.counters.reconnects.fetch_add(1, std::memory_order_relaxed);
      c.ever_up = true;
      c.state = Outgoing::State::up;
      c.backoff = std::chrono::milliseconds(0);
      came_up = true;
      pump(c);  // credits may have arrived before the event
    } else if (event == FI_SHUTDOWN) {
      teardown(c, "closed by the peer", went_down);
    }
  }
  if (came_up) host_.connection_changed(c.id, true, "connected to " + c.remote.text());
  if (went_down) host_.connection_changed(c.id, false, "connection lost");
}

void OfiTransport::on_send_event_error(const fi_eq_err_entry& error) {
  void* context = error.context != nullptr ? error.context : (error.fid != nullptr ? error.fid->context : nullptr);
  if (context == nullptr) return;
  auto* link = static_cast<SendLink*>(context);
  Outgoing& c = *link->owner;
  bool went_down = false;
  {
    std::lock_guard lock(c.mutex);
    if (link->closed || c.link != link) return;
    teardown(c, "connect: " + event_error_text(send_eq_.get(), error), went_down);
  }
  if (went_down) host_.connection_changed(c.id, false, "connection lost");
}

void OfiTransport::send_loop(std::stop_token stop) {
  auto next_check = Clock::now();
  while (!stop.stop_requested()) {
    bool worked = drain_queues(
        send_cq_.get(), send_eq_.get(),
        [this](const fi_cq_msg_entry& entry) {
          auto& op = *static_cast<OpContext*>(entry.op_context);
          if (op.kind == OpKind::credit_receive) static_cast<SendLink*>(op.link)->credit_buffers[op.index].length = entry.len;
          on_send_completion(op);
        },
        [this](const fi_cq_err_entry& error) { on_send_error(error); },
        [this](std::uint32_t kind, const fi_eq_cm_entry& entry) { on_send_event(kind, entry.fid); },
        [this](const fi_eq_err_entry& error) { on_send_event_error(error); });

    // Connections to open, failures posters reported, posts the provider refused, reconnection timers.
    auto now = Clock::now();
    if (send_attention_.exchange(false, std::memory_order_acq_rel) || now >= next_check) {
      next_check = now + std::chrono::milliseconds(100);
      std::size_t peers = outgoing_count_.load(std::memory_order_acquire);
      for (std::size_t i = 0; i < peers; ++i) {
        Outgoing& c = *outgoing_[i];
        bool went_down = false;
        bool notify = false;
        {
          std::lock_guard lock(c.mutex);
          if (c.link != nullptr && !c.link->failure.empty()) teardown(c, c.link->failure, went_down);
          bool retry = c.state == Outgoing::State::down && (c.ever_up || settings_.connect_at_start || c.connect_requested || !c.queue.empty()) &&
                       now >= c.retry_at;
          if ((c.state == Outgoing::State::idle && c.connect_requested) || retry) start_connect(c);
          if (c.state == Outgoing::State::down && (c.ever_up || settings_.connect_at_start || c.connect_requested || !c.queue.empty()))
            next_check = std::min(next_check, c.retry_at);
          if (c.state == Outgoing::State::up) pump(c);
          if (c.want_ready.load(std::memory_order_relaxed) && c.queue.size() <= c.queue.capacity() / 2) {
            c.want_ready.store(false, std::memory_order_relaxed);
            notify = true;
          }
        }
        if (went_down) host_.connection_changed(c.id, false, "connection lost");
        if (notify) host_.send_ready(c.id);
      }
    }
    if (worked || settings_.busy_poll) continue;
    auto limit = std::chrono::duration_cast<std::chrono::milliseconds>(next_check - Clock::now()) + std::chrono::milliseconds(1);
    wait(send_waiter_, send_cq_.get(), send_eq_.get(), std::min<std::chrono::milliseconds>(limit, std::chrono::milliseconds(100)));
  }
}

// ---- receive side ---------------------------------------------------------------------------------------

void OfiTransport::accept(fi_info* request) {
  auto connection = std::make_unique<Incoming>(std::max<std::size_t>(1, recv_depth_ / 4));
  Incoming& c = *connection;
  c.remote = address_text(request->dest_addr);
  c.buffers.resize(recv_depth_);
  for (std::size_t i = 0; i < c.buffers.size(); ++i) {
    c.buffers[i].context.kind = OpKind::data_receive;
    c.buffers[i].context.index = static_cast<std::uint32_t>(i);
    c.buffers[i].context.link = &c;
  }
  c.credit_sends.resize(kCreditSends);
  for (std::size_t i = 0; i < c.credit_sends.size(); ++i) {
    c.credit_sends[i].context.kind = OpKind::credit_send;
    c.credit_sends[i].context.index = static_cast<std::uint32_t>(i);
    c.credit_sends[i].context.link = &c;
  }
  std::string error;
  c.endpoint = make_endpoint(request, &c, receive_eq_.get(), receive_cq_.get(), error);
  if (c.endpoint == nullptr) {
    fi_reject(passive_.get(), request->handle, nullptr, 0);
    refused_requests_.fetch_add(1, std::memory_order_relaxed);
    host_.log(LogLevel::warning, "refused a connection from " + c.remote + ": " + error);
    return;
  }
  {
    std::lock_guard peers(peers_mutex_);
    c.id = next_incoming_id_++;
    incoming_.push_back(std::move(connection));
  }
  // Buffers go up before the connection does: the sender may start as soon as it has credits.
  replenish(c);
  if (c.closed) return;
  int result = fi_accept(c.endpoint, nullptr, 0);
  if (result != 0) {
    refused_requests_.fetch_add(1, std::memory_order_relaxed);
    close_incoming(c, "fi_accept: " + fabric_error(result), Ending::normal);
  }
}

void OfiTransport::replenish(Incoming& c) {
  while (!c.closed && c.posted - c.consumed < c.buffers.size()) {
    mem::Ref buffer = receive_pool_->allocate(settings_.recv_buffer_size);
    if (!buffer) {
      // Back-pressure: no credits go out for buffers we do not have; the pool calls when it has blocks.
      if (!c.waiting_for_pool) receive_pool_waits_.fetch_add(1, std::memory_order_relaxed);
      c.waiting_for_pool = true;
      return;
    }
    c.waiting_for_pool = false;
    BufferOp& op = c.buffers[c.posted % c.buffers.size()];
    void* descriptor = registrar_slot_ == kNoRegistration ? nullptr : buffer.head()->key(registrar_slot_).descriptor;
    ssize_t result = fi_recv(c.endpoint, buffer.data(), buffer.size(), descriptor, 0, &op.context.provider);
    if (result == -FI_EAGAIN) {  // try again on the next round of the receive thread
      resume_requested_.store(true, std::memory_order_release);
      c.waiting_for_pool = true;
      return;
    }
    if (result != 0) {
      close_incoming(c, "fi_recv: " + fabric_error(static_cast<int>(result)), Ending::normal);
      return;
    }
    op.buffer = std::move(buffer);
    op.done = false;
    ++c.posted;
    c.credits.posted();
  }
}

void OfiTransport::send_credits(Incoming& c) {
  while (c.up && !c.closed && c.credits.report_due()) {
    auto free_slot = std::find_if(c.credit_sends.begin(), c.credit_sends.end(), [](const BufferOp& op) { return !op.buffer; });
    if (free_slot == c.credit_sends.end()) return;  // a credit send completes soon and calls again
    mem::Ref buffer = credit_pool_->allocate(kCreditMessageSize);
    if (!buffer) return;
    encode_credit({static_cast<std::uint32_t>(settings_.recv_buffer_size), c.credits.posted_total()}, buffer.data());
    void* descriptor = registrar_slot_ == kNoRegistration ? nullptr : buffer.head()->key(registrar_slot_).descriptor;
    ssize_t result = fi_send(c.endpoint, buffer.data(), kCreditMessageSize, descriptor, 0, &free_slot->context.provider);
    if (result == -FI_EAGAIN) {
      resume_requested_.store(true, std::memory_order_release);
      return;
    }
    if (result != 0) {
      close_incoming(c, "sending credits: " + fabric_error(static_cast<int>(result)), Ending::normal);
      return;
    }
    free_slot->buffer = std::move(buffer);
    c.credits.report();
  }
}

void OfiTransport::close_incoming(Incoming& c, const std::string& reason, Ending ending) {
  if (c.closed) return;
  bool was_up = c.up;
  c.closed = true;
  c.up = false;
  if (c.endpoint != nullptr) {
    fi_shutdown(c.endpoint, 0);
    fi_close(&c.endpoint->fid);  // after this the provider writes into none of the buffers below
  }
  c.endpoint = nullptr;
  for (BufferOp& op : c.buffers) op.buffer.reset();
  for (BufferOp& op : c.credit_sends) op.buffer.reset();
  c.assembling.data.reset();  // a frame half received goes back to the pool
  c.have = 0;
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
  if (was_up) host_.connection_changed(c.id, false, reason);
}

bool OfiTransport::deliver(Incoming& c, Frame& frame) {
  std::size_t bytes = frame.header.total_length;
  Tid target = frame.header.target;
  switch (host_.deliver(std::move(frame), c.id)) {
    case DeliverStatus::accepted:
      c.counters.frames.fetch_add(1, std::memory_order_relaxed);
      c.counters.bytes.fetch_add(bytes, std::memory_order_relaxed);
      return true;
    case DeliverStatus::busy:
      // The target's queue is full: hold the frame and stop taking messages. Buffers are not reposted
      // meanwhile, so the sender runs out of credits: back-pressure reaches it without a message.
      if (&frame != &c.pending) c.pending = std::move(frame);
      c.has_pending = true;
      c.paused = true;
      delivery_waits_.fetch_add(1, std::memory_order_relaxed);
      return false;
    case DeliverStatus::rejected:
      close_incoming(c, "frame for application " + std::to_string(target) + ", which is not here", Ending::bad);
      return false;
  }
  return false;
}

bool OfiTransport::take_message(Incoming& c, mem::Ref&& buffer, std::size_t length) {
  buffer.set_window(0, length);
  if (c.have == 0) {
    FrameCheck check = check_header(buffer.data(), length, 0, settings_.max_frame_size);
    if (check != FrameCheck::ok) {
      close_incoming(c, "bad frame: " + std::string(to_string(check)), Ending::bad);
      return false;
    }
    c.assembling.header = decode_header(buffer.data());
    if (length > c.assembling.header.total_length) {
      close_incoming(c, "bad frame: a message runs past the end of its frame", Ending::bad);
      return false;
    }
    c.assembling.data = std::move(buffer);
    c.have = length;
  } else {
    if (c.have + length > c.assembling.header.total_length) {
      close_incoming(c, "bad frame: a message runs past the end of its frame", Ending::bad);
      return false;
    }
    c.assembling.data.append(std::move(buffer));  // chained, not copied
    c.have += length;
  }
  if (c.have < c.assembling.header.total_length) return true;
  c.have = 0;
  Frame frame = std::move(c.assembling);
  c.assembling = Frame{};
  return deliver(c, frame);
}

void OfiTransport::consume(Incoming& c) {
  while (!c.closed && !c.paused && c.consumed < c.posted) {
    BufferOp& op = c.buffers[c.consumed % c.buffers.size()];
    if (!op.done) return;  // messages land in posting order: take them in that order
    op.done = false;
    ++c.consumed;
    if (!take_message(c, std::move(op.buffer), op.length)) return;
  }
}

void OfiTransport::on_receive_completion(OpContext& op, std::size_t length) {
  auto& c = *static_cast<Incoming*>(op.link);
  if (c.closed) return;
  if (op.kind == OpKind::credit_send) {
    c.credit_sends[op.index].buffer.reset();
    send_credits(c);
    return;
  }
  BufferOp& buffer = c.buffers[op.index];
  buffer.done = true;
  buffer.length = length;
  c.credits.received();
  consume(c);
  replenish(c);
  send_credits(c);
}

void OfiTransport::on_receive_error(const fi_cq_err_entry& error) {
  if (error.op_context == nullptr) return;
  auto& op = *static_cast<OpContext*>(error.op_context);
  auto& c = *static_cast<Incoming*>(op.link);
  if (c.closed) return;
  Ending ending = c.have > 0 || c.has_pending ? Ending::truncated : Ending::normal;
  if (error.err == FI_ECANCELED) {  // the provider flushed the posted buffers: the connection is gone
    close_incoming(c, "closed by the peer", ending);
    return;
  }
  completion_errors_.fetch_add(1, std::memory_order_relaxed);
  close_incoming(c, "receive failed: " + completion_error_text(receive_cq_.get(), error), ending);
}

void OfiTransport::on_receive_event(std::uint32_t event, fid_t fid) {
  if (fid == nullptr || fid->context == nullptr || fid->context == &passive_marker_) return;
  auto& c = *static_cast<Incoming*>(fid->context);
  if (c.closed) return;
  if (event == FI_CONNECTED) {
    c.up = true;
    accepted_.fetch_add(1, std::memory_order_relaxed);
    host_.connection_changed(c.id, true, "accepted from " + c.remote);
    send_credits(c);
  } else if (event == FI_SHUTDOWN) {
    // Messages that arrived before the peer went may still be in the completion queue: take them first.
    fi_cq_msg_entry entries[kCompletionBatch];
    ssize_t count = 0;
    while ((count = fi_cq_read(receive_cq_.get(), entries, kCompletionBatch)) > 0)
      for (ssize_t i = 0; i < count; ++i)
        on_receive_completion(*static_cast<OpContext*>(entries[i].op_context), entries[i].len);
    if (!c.closed)
      close_incoming(c, "closed by the peer", c.have > 0 || c.has_pending ? Ending::truncated : Ending::normal);
  }
}

void OfiTransport::on_receive_event_error(const fi_eq_err_entry& error) {
  void* context = error.context != nullptr ? error.context : (error.fid != nullptr ? error.fid->context : nullptr);
  if (context == nullptr || context == &passive_marker_) {
    refused_requests_.fetch_add(1, std::memory_order_relaxed);
    host_.log(LogLevel::warning, "connection request on " + local_.text() + " failed: " + event_error_text(receive_eq_.get(), error));
    return;
  }
  auto& c = *static_cast<Incoming*>(context);
  if (c.closed) return;
  close_incoming(c, "connection error: " + event_error_text(receive_eq_.get(), error),
                 c.have > 0 ? Ending::truncated : Ending::normal);
}

void OfiTransport::resume_incoming() {
  for (auto& connection : incoming_) {
    Incoming& c = *connection;
    if (c.closed) continue;
    if (c.paused && c.has_pending) {
      c.has_pending = false;
      c.paused = false;
      if (!deliver(c, c.pending)) continue;
      consume(c);
    }
    if (c.waiting_for_pool || c.posted - c.consumed < c.buffers.size()) replenish(c);
    send_credits(c);
  }
}

void OfiTransport::receive_loop(std::stop_token stop) {
  while (!stop.stop_requested()) {
    bool worked = drain_queues(
        receive_cq_.get(), receive_eq_.get(),
        [this](const fi_cq_msg_entry& entry) { on_receive_completion(*static_cast<OpContext*>(entry.op_context), entry.len); },
        [this](const fi_cq_err_entry& error) { on_receive_error(error); },
        [this](std::uint32_t kind, const fi_eq_cm_entry& entry) {
          if (kind == FI_CONNREQ) {
            accept(entry.info);
            fi_freeinfo(entry.info);
          } else {
            on_receive_event(kind, entry.fid);
          }
        },
        [this](const fi_eq_err_entry& error) { on_receive_event_error(error); });
    if (resume_requested_.exchange(false, std::memory_order_acq_rel)) resume_incoming();
    if (worked || settings_.busy_poll) continue;
    wait(receive_waiter_, receive_cq_.get(), receive_eq_.get(), std::chrono::milliseconds(100));
  }
}

// ---- reports --------------------------------------------------------------------------------------------

void OfiTransport::report(MetricSink& sink) const {
  TransportTotals totals;
  std::uint64_t credit_waits = 0;
  {
    std::lock_guard peers(peers_mutex_);
    for (const auto& c : outgoing_) {
      totals.add_outgoing(c->counters);
      credit_waits += c->credit_waits.load(std::memory_order_relaxed);
    }
    for (const auto& c : incoming_) {
      totals.add_incoming(c->counters);
      totals.incoming_connections += c->closed ? 0 : 1;
    }
  }
  totals.connections_accepted = accepted_.load();
  totals.bad_streams = bad_streams_.load();
  totals.closed_by_peer = closed_by_peer_.load();
  totals.truncated_frames = truncated_frames_.load();
  totals.receive_pool_waits = receive_pool_waits_.load();
  totals.delivery_waits = delivery_waits_.load();
  report_totals(sink, totals);
  auto d = [](std::uint64_t v) { return static_cast<double>(v); };
  sink.counter("credit_waits", d(credit_waits), "times a connection had frames to send and no credits");
  sink.counter("connection_requests_refused", d(refused_requests_.load()), "connection requests that failed or were refused");
  sink.counter("completion_errors", d(completion_errors_.load()), "operations that completed with an error");
  sink.counter("registrations", d(registrar_ ? registrar_->registrations() : 0), "pool chunks registered with the domain");
  sink.gauge("registered_bytes", d(registrar_ ? registrar_->registered_bytes() : 0), "bytes of pool memory registered now");
  sink.counter("registration_seconds", registrar_ ? registrar_->registration_seconds() : 0, "time spent registering memory");
  sink.gauge("busy_poll", settings_.busy_poll ? 1 : 0, "1 when completion threads busy-poll, 0 when they wait on epoll");
  sink.gauge("memory_registration", registrar_ ? 1 : 0, "1 when pools are registered with the domain");
}

std::vector<ConnectionInfo> OfiTransport::connections() const {
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
      double credits = c->link != nullptr ? static_cast<double>(c->link->credits.available()) : 0;
      info.metrics.push_back({"credits", Metric::Kind::gauge, credits, "messages the receiver has buffers for", {}});
    }
    add_outgoing_metrics(info.metrics, c->counters);
    info.metrics.push_back({"credit_waits", Metric::Kind::counter, static_cast<double>(c->credit_waits.load()), "stalls for credits", {}});
    list.push_back(std::move(info));
  }
  for (const auto& c : incoming_) {
    if (c->closed) continue;
    ConnectionInfo info;
    info.peer = c->id;
    info.remote = c->remote + " (in)";
    info.up = c->up;
    add_incoming_metrics(info.metrics, c->counters);
    list.push_back(std::move(info));
  }
  return list;
}

}  // namespace daqx::ptofi
