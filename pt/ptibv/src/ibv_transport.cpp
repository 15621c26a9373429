// ptibv implementation: device set-up, outgoing RC connections with credit-paced sends straight from
// registered pool blocks, incoming connections with pre-posted receive buffers (per QP or in a shared
// receive queue) chained into frames, and teardown that recycles one connection's blocks only.
#include "ibv_transport.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace daqx::ptibv {
namespace {

using Clock = std::chrono::steady_clock;
constexpr int kCompletionBatch = 32;
constexpr int kReadRounds = 8;            // batches per round before the thread looks at events and timers
constexpr std::size_t kCreditBufferSize = 64;
constexpr std::size_t kMaxCompletionQueue = 65536;
constexpr std::uint32_t kCreditTag = 0x80000000u;  // low half of a wr_id: a credit message, not data
constexpr unsigned kAckBatch = 64;                 // completion events acknowledged together

std::uint64_t work_id(std::uint32_t serial, std::uint32_t index) {
  return (static_cast<std::uint64_t>(serial) << 32) | index;
}
std::uint32_t work_serial(std::uint64_t wr_id) { return static_cast<std::uint32_t>(wr_id >> 32); }
std::uint32_t work_index(std::uint64_t wr_id) { return static_cast<std::uint32_t>(wr_id); }

void drain_eventfd(int fd) {
  std::uint64_t value = 0;
  while (read(fd, &value, sizeof value) > 0) {
  }
}

void set_nonblocking(int fd) {
  int flags = fcntl(fd, F_GETFL);
  if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) != 0)
    throw std::runtime_error("fcntl(O_NONBLOCK): " + errno_text(errno));
}

std::string event_text(const rdma_cm_event& event) {
  std::string text = rdma_event_str(event.event);
  if (event.status != 0) text.append(" (status ").append(std::to_string(event.status)).append(")");
  return text;
}

// An rdma_cm event copied out of librdmacm's, with its private data, so that it can be acknowledged at
// once: rdma_destroy_id waits for every event of its id to be acknowledged.
struct CmEvent {
  rdma_cm_event event{};
  std::uint8_t private_data[256]{};
  std::uint8_t private_data_length = 0;
};

bool next_cm_event(rdma_event_channel* channel, CmEvent& copy) {
  rdma_cm_event* event = nullptr;
  if (channel == nullptr || rdma_get_cm_event(channel, &event) != 0) return false;
  copy.event = *event;
  const void* data = event->param.conn.private_data;
  std::size_t length = event->param.conn.private_data_len;
  copy.private_data_length = 0;
  if (data != nullptr && (event->event == RDMA_CM_EVENT_CONNECT_REQUEST || event->event == RDMA_CM_EVENT_CONNECT_RESPONSE ||
                          event->event == RDMA_CM_EVENT_ESTABLISHED || event->event == RDMA_CM_EVENT_REJECTED)) {
    length = std::min<std::size_t>(length, sizeof copy.private_data);
    std::memcpy(copy.private_data, data, length);
    copy.private_data_length = static_cast<std::uint8_t>(length);
  }
  copy.event.param.conn.private_data = copy.private_data;
  copy.event.param.conn.private_data_len = copy.private_data_length;
  rdma_ack_cm_event(event);
  return true;
}

}  // namespace

// ---- life cycle -----------------------------------------------------------------------------------------

IbvTransport::IbvTransport(TransportHost& host)
    : host_(host), settings_(Settings::from(host.params(), host.max_frame_size())) {
  devices_ = std::make_unique<DeviceList>();
  if (devices_->size() == 0)
    throw std::runtime_error("no RDMA device on this host (rdma_get_devices found none: is a driver loaded, "
                             "e.g. mlx5_ib, or a soft-RoCE device made with `rdma link add rxe0 type rxe netdev eth0`?)");
  if (!settings_.device.empty() && devices_->by_name(settings_.device) == nullptr &&
      settings_.device.find_first_of(".:") == std::string::npos)
    throw std::runtime_error("parameter device is '" + settings_.device + "': no such RDMA device (devices: " +
                             devices_->names() + ")");
  send_events_ = rdma_create_event_channel();
  receive_events_ = rdma_create_event_channel();
  if (send_events_ == nullptr || receive_events_ == nullptr)
    throw std::runtime_error("rdma_create_event_channel: " + errno_text(errno) + " (is rdma_ucm loaded?)");
  set_nonblocking(send_events_->fd);
  set_nonblocking(receive_events_->fd);
  outgoing_.reserve(kMaxPeers);
  host_.on_deliver_ready([this] {
    resume_requested_.store(true, std::memory_order_release);
    wake(receive_waiter_);
  });
}

IbvTransport::~IbvTransport() {
  stop();
  if (send_events_ != nullptr) rdma_destroy_event_channel(send_events_);
  if (receive_events_ != nullptr) rdma_destroy_event_channel(receive_events_);
}

ibv_context* IbvTransport::choose_device(const sockaddr* address) {
  std::string error;
  if (!settings_.device.empty()) {
    if (ibv_context* named = devices_->by_name(settings_.device)) return named;
    sockaddr_storage ip = resolve_host(settings_.device, 0);
    ibv_context* found = device_of_address(reinterpret_cast<sockaddr*>(&ip), error);
    if (found == nullptr) throw std::runtime_error("parameter device is '" + settings_.device + "': " + error);
    return found;
  }
  ibv_context* found = device_of_address(address, error);
  if (found == nullptr)
    throw std::runtime_error(error + "; name the device with the parameter device (devices: " + devices_->names() + ")");
  return found;
}

void IbvTransport::open_device(ibv_context* context) {
  std::lock_guard lock(open_mutex_);
  if (context_ != nullptr) {
    if (context != context_)
      throw std::runtime_error("ptibv uses device " + device_name(context_) + "; this endpoint is on " +
                               device_name(context) + " (one device per executive: set the parameter device)");
    return;
  }
  context_ = context;
  if (ibv_query_device(context_, &device_attr_) != 0)
    throw std::runtime_error("ibv_query_device(" + device_name(context_) + "): " + errno_text(errno));
  int device_node = device_numa_node(context_);
  numa_node_ = settings_.numa == Settings::Numa::node ? settings_.numa_node
               : settings_.numa == Settings::Numa::device ? device_node
                                                          : -1;

  // ptibv's own pools, near the device when the configuration says so.
  std::size_t chunk = std::max<std::size_t>(settings_.recv_buffer_size, std::size_t{4} << 20);
  mem::PoolConfig receive;
  receive.classes.push_back({settings_.recv_buffer_size, chunk / settings_.recv_buffer_size, 1,
                             std::max<std::size_t>(1, settings_.recv_pool_bytes / chunk)});
  receive.preferred_numa_node = numa_node_;
  receive_pool_ = &host_.make_pool("recv", receive);
  mem::PoolConfig credit;
  credit.classes.push_back({kCreditBufferSize, 1024, 1, 64});
  credit.preferred_numa_node = numa_node_;
  credit_pool_ = &host_.make_pool("credit", credit);
  receive_pool_->on_available([this] {
    resume_requested_.store(true, std::memory_order_release);
    wake(receive_waiter_);
  });

  pd_ = ibv_alloc_pd(context_);
  if (pd_ == nullptr) throw std::runtime_error("ibv_alloc_pd: " + errno_text(errno));
  // Every pool of the executive, now and later, is registered once per chunk: sends and receives name
  // each block's lkey without looking it up.
  registrar_ = std::make_unique<MemoryRegistrar>(pd_);
  registrar_slot_ = host_.register_memory(*registrar_);

  std::size_t max_cqe = static_cast<std::size_t>(std::max(device_attr_.max_cqe, 64));
  send_cq_size_ = std::min(max_cqe, kMaxCompletionQueue);
  receive_cq_size_ = send_cq_size_;
  send_depth_ = std::clamp<std::size_t>(settings_.send_depth, 1, static_cast<std::size_t>(std::max(device_attr_.max_qp_wr, 2)) - 1);
  recv_depth_ = std::clamp<std::size_t>(settings_.recv_depth, 2, static_cast<std::size_t>(std::max(device_attr_.max_qp_wr, 2)));
  max_sge_ = std::clamp<std::size_t>(static_cast<std::size_t>(device_attr_.max_sge), 1, pt::MessagePieces::kMaxPieces);

  if (!settings_.busy_poll) {
    send_waiter_.channel = ibv_create_comp_channel(context_);
    receive_waiter_.channel = ibv_create_comp_channel(context_);
    if (send_waiter_.channel == nullptr || receive_waiter_.channel == nullptr)
      throw std::runtime_error("ibv_create_comp_channel: " + errno_text(errno) + " (waitMode=busy needs none)");
    set_nonblocking(send_waiter_.channel->fd);
    set_nonblocking(receive_waiter_.channel->fd);
  }
  send_cq_ = ibv_create_cq(context_, static_cast<int>(send_cq_size_), nullptr, send_waiter_.channel, 0);
  receive_cq_ = ibv_create_cq(context_, static_cast<int>(receive_cq_size_), nullptr, receive_waiter_.channel, 0);
  if (send_cq_ == nullptr || receive_cq_ == nullptr) throw std::runtime_error("ibv_create_cq: " + errno_text(errno));
  send_waiter_.cq = send_cq_;
  receive_waiter_.cq = receive_cq_;

  if (settings_.srq == Settings::Srq::automatic && device_attr_.max_srq > 0) {
    srq_capacity_ = std::min<std::size_t>(static_cast<std::size_t>(device_attr_.max_srq_wr), 16384);
    ibv_srq_init_attr attributes{};
    attributes.attr.max_wr = static_cast<std::uint32_t>(srq_capacity_);
    attributes.attr.max_sge = 1;
    srq_ = ibv_create_srq(pd_, &attributes);
    if (srq_ == nullptr) {
      host_.log(LogLevel::warning, "ibv_create_srq: " + errno_text(errno) + ": receive buffers go to each connection");
      srq_capacity_ = 0;
    } else {
      srq_capacity_ = attributes.attr.max_wr;
    }
  }

  if (!settings_.busy_poll) {
    make_waiter(send_waiter_, send_events_->fd, -1);
    make_waiter(receive_waiter_, receive_events_->fd, context_->async_fd);
  }
  set_nonblocking(context_->async_fd);
  host_.log(LogLevel::info,
            "device " + device_name(context_) + " (NUMA node " + std::to_string(device_node) + "), pools " +
                (numa_node_ >= 0 ? "on node " + std::to_string(numa_node_) : std::string("as the policy says")) + ", " +
                std::to_string(max_sge_) + " pieces per message, " + std::to_string(send_depth_) +
                " sends in flight per connection, " + std::to_string(recv_depth_) + " receive buffers per connection" +
                (srq_ != nullptr ? " in a shared receive queue of " + std::to_string(srq_capacity_) : std::string("")) +
                ", " + (settings_.busy_poll ? "busy polling" : "completion channels"));

  send_thread_ = host_.start_thread("send", [this](std::stop_token stop) { send_loop(stop); });
  receive_thread_ = host_.start_thread("recv", [this](std::stop_token stop) { receive_loop(stop); });
}

void IbvTransport::make_waiter(Waiter& waiter, int cm_fd, int extra_fd) {
  waiter.epoll = epoll_create1(EPOLL_CLOEXEC);
  waiter.wake = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  waiter.extra_fd = extra_fd;
  if (waiter.epoll < 0 || waiter.wake < 0) throw std::runtime_error("epoll/eventfd: " + errno_text(errno));
  for (int fd : {waiter.channel->fd, cm_fd, waiter.wake, extra_fd}) {
    if (fd < 0) continue;
    epoll_event event{};
    event.events = EPOLLIN;
    event.data.fd = fd;
    if (epoll_ctl(waiter.epoll, EPOLL_CTL_ADD, fd, &event) != 0) throw std::runtime_error("epoll_ctl: " + errno_text(errno));
  }
}

void IbvTransport::wake(Waiter& waiter) noexcept {
  if (waiter.wake < 0) return;  // busy polling: the thread looks at its flags on every round
  std::uint64_t one = 1;
  if (write(waiter.wake, &one, sizeof one) < 0) {
    // Only a counter overflow after 2^64 wake-ups could fail: nothing to do.
  }
}

void IbvTransport::wait(Waiter& waiter, std::chrono::milliseconds limit) {
  if (!waiter.armed) {
    // Ask for an event on the next completion, then look once more: one that came in between would
    // otherwise wait for the one after it.
    ibv_req_notify_cq(waiter.cq, 0);
    waiter.armed = true;
    return;
  }
  epoll_event events[4];
  int count = epoll_wait(waiter.epoll, events, 4, static_cast<int>(std::max<long long>(limit.count(), 0)));
  for (int i = 0; i < count; ++i) {
    if (events[i].data.fd == waiter.wake) drain_eventfd(waiter.wake);
    if (events[i].data.fd == waiter.extra_fd) waiter.extra_ready = true;
    if (events[i].data.fd == waiter.channel->fd) {
      ibv_cq* cq = nullptr;
      void* context = nullptr;
      while (ibv_get_cq_event(waiter.channel, &cq, &context) == 0) {
        waiter.armed = false;
        if (++waiter.unacked >= kAckBatch) {
          ibv_ack_cq_events(waiter.cq, waiter.unacked);
          waiter.unacked = 0;
        }
      }
    }
  }
}

void IbvTransport::listen(const EndpointAddress& local) {
  local_ = local;
  sockaddr_storage address = resolve_host(local.hostname, local.port);
  open_device(choose_device(reinterpret_cast<sockaddr*>(&address)));
  if (rdma_create_id(receive_events_, &listener_, nullptr, RDMA_PS_TCP) != 0)
    throw std::runtime_error("rdma_create_id: " + errno_text(errno));
  if (rdma_bind_addr(listener_, reinterpret_cast<sockaddr*>(&address)) != 0)
    throw std::runtime_error("rdma_bind_addr(" + local.text() + "): " + errno_text(errno));
  if (listener_->verbs != nullptr && listener_->verbs != context_)
    throw std::runtime_error("endpoint " + local.text() + " is on device " + device_name(listener_->verbs) +
                             ", ptibv uses " + device_name(context_));
  if (rdma_listen(listener_, 128) != 0) throw std::runtime_error("rdma_listen(" + local.text() + "): " + errno_text(errno));
  wake(receive_waiter_);
}

PeerId IbvTransport::connect(const EndpointAddress& remote) {
  sockaddr_storage address = resolve_host(remote.hostname, remote.port);
  if (context_ == nullptr) {
    // A context that only sends: its device is the one named, or the one its first peer is reached by.
    if (!settings_.device.empty()) {
      open_device(choose_device(nullptr));
    } else {
      rdma_cm_id* probe = nullptr;
      if (rdma_create_id(nullptr, &probe, nullptr, RDMA_PS_TCP) != 0)
        throw std::runtime_error("rdma_create_id: " + errno_text(errno));
      int result = rdma_resolve_addr(probe, nullptr, reinterpret_cast<sockaddr*>(&address),
                                     static_cast<int>(settings_.resolve_timeout.count()));
      ibv_context* device = result == 0 ? probe->verbs : nullptr;
      int error = errno;
      rdma_destroy_id(probe);
      if (device == nullptr)
        throw std::runtime_error("no RDMA device reaches " + remote.text() + " (rdma_resolve_addr: " +
                                 (result == 0 ? std::string("no device") : errno_text(error)) +
                                 "); name one with the parameter device");
      open_device(device);
    }
  }
  Outgoing* c = nullptr;
  {
    std::lock_guard peers(peers_mutex_);
    if (outgoing_.size() >= kMaxPeers) throw std::runtime_error("more than " + std::to_string(kMaxPeers) + " peers");
    auto connection = std::make_unique<Outgoing>(settings_.send_queue);
    connection->id = static_cast<PeerId>(outgoing_.size());
    connection->remote = remote;
    connection->address = address;
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

void IbvTransport::open_connections() {
  std::size_t peers = outgoing_count_.load(std::memory_order_acquire);
  for (std::size_t i = 0; i < peers; ++i) {
    Outgoing& c = *outgoing_[i];
    std::lock_guard lock(c.mutex);
    if (c.state == Outgoing::State::idle || (c.state == Outgoing::State::down && !c.ever_up)) c.connect_requested = true;
  }
  send_attention_.store(true, std::memory_order_release);
  wake(send_waiter_);
}

void IbvTransport::stop() {
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
      c->queue.clear();
      c->cursor = pt::SendCursor{};
      c->state = Outgoing::State::down;
      c->link = nullptr;
    }
    // Queue pairs go first: after ibv_destroy_qp the device touches none of the blocks released below.
    for (auto& [serial, link] : links_) {
      if (link->qp != nullptr) ibv_destroy_qp(link->qp);
      if (link->id != nullptr) rdma_destroy_id(link->id);
      link->qp = nullptr;
      link->id = nullptr;
    }
    links_.clear();
    for (auto& c : incoming_) {
      if (c->qp != nullptr) ibv_destroy_qp(c->qp);
      if (c->cm_id != nullptr) rdma_destroy_id(c->cm_id);
      c->qp = nullptr;
      c->cm_id = nullptr;
      c->closed = true;
      c->up = false;
      c->held.clear();
      c->assembling.data.reset();
      c->pending.data.reset();
    }
  }
  if (listener_ != nullptr) rdma_destroy_id(listener_);
  listener_ = nullptr;
  if (srq_ != nullptr) ibv_destroy_srq(srq_);
  srq_ = nullptr;
  slots_.clear();  // every posted receive buffer goes back
  receive_buffers_posted_.store(0, std::memory_order_relaxed);
  // Registrations belong to the protection domain: they go before it does.
  if (registrar_slot_ != pt::kNoRegistration) host_.deregister_memory(registrar_slot_);
  registrar_slot_ = pt::kNoRegistration;
  for (Waiter* waiter : {&send_waiter_, &receive_waiter_}) {
    if (waiter->cq != nullptr && waiter->unacked > 0) ibv_ack_cq_events(waiter->cq, waiter->unacked);
    waiter->unacked = 0;
  }
  if (send_cq_ != nullptr) ibv_destroy_cq(send_cq_);
  if (receive_cq_ != nullptr) ibv_destroy_cq(receive_cq_);
  send_cq_ = receive_cq_ = nullptr;
  for (Waiter* waiter : {&send_waiter_, &receive_waiter_}) {
    if (waiter->channel != nullptr) ibv_destroy_comp_channel(waiter->channel);
    if (waiter->epoll >= 0) close(waiter->epoll);
    if (waiter->wake >= 0) close(waiter->wake);
    waiter->channel = nullptr;
    waiter->cq = nullptr;
    waiter->epoll = waiter->wake = -1;
  }
  if (pd_ != nullptr) ibv_dealloc_pd(pd_);
  pd_ = nullptr;
}

// ---- queue pairs ----------------------------------------------------------------------------------------

ibv_qp* IbvTransport::make_qp(rdma_cm_id* id, bool outgoing, std::uint32_t& max_inline, std::string& error) {
  ibv_qp_init_attr attributes{};
  attributes.qp_type = IBV_QPT_RC;
  attributes.sq_sig_all = 0;
  if (outgoing) {
    attributes.send_cq = send_cq_;
    attributes.recv_cq = send_cq_;
    attributes.cap.max_send_wr = static_cast<std::uint32_t>(send_depth_);
    attributes.cap.max_recv_wr = kCreditBuffers;
    attributes.cap.max_send_sge = static_cast<std::uint32_t>(max_sge_);
    attributes.cap.max_inline_data = static_cast<std::uint32_t>(settings_.inline_threshold);
  } else {
    attributes.send_cq = receive_cq_;
    attributes.recv_cq = receive_cq_;
    attributes.srq = srq_;
    attributes.cap.max_send_wr = kCreditSends;
    attributes.cap.max_recv_wr = srq_ != nullptr ? 0 : static_cast<std::uint32_t>(recv_depth_);
    attributes.cap.max_send_sge = 1;
    attributes.cap.max_inline_data = static_cast<std::uint32_t>(pt::kCreditMessageSize);
  }
  attributes.cap.max_recv_sge = 1;
  ibv_qp* qp = ibv_create_qp(pd_, &attributes);
  if (qp == nullptr && outgoing && attributes.cap.max_inline_data > 0) {
    attributes.cap.max_inline_data = 0;  // the device has less inline room than asked: send everything by DMA
    qp = ibv_create_qp(pd_, &attributes);
  }
  if (qp == nullptr) {
    error = "ibv_create_qp: " + errno_text(errno);
    return nullptr;
  }
  max_inline = attributes.cap.max_inline_data;
  if (!outgoing && max_inline < pt::kCreditMessageSize) {
    ibv_destroy_qp(qp);
    error = "device " + device_name(context_) + " cannot send 16 bytes inline (ptibv's credit messages need it)";
    return nullptr;
  }
  if (!move_qp(id, qp, IBV_QPS_INIT, error)) {
    ibv_destroy_qp(qp);
    return nullptr;
  }
  return qp;
}

bool IbvTransport::move_qp(rdma_cm_id* id, ibv_qp* qp, ibv_qp_state state, std::string& error) {
  ibv_qp_attr attributes{};
  int mask = 0;
  attributes.qp_state = state;
  if (rdma_init_qp_attr(id, &attributes, &mask) != 0) {
    error = "rdma_init_qp_attr for state " + std::to_string(static_cast<int>(state)) + ": " + errno_text(errno);
    return false;
  }
  if (state == IBV_QPS_RTR) {
    if (settings_.mtu != 0) {
      auto wanted = static_cast<ibv_mtu>(mtu_enum(settings_.mtu));
      if (wanted < attributes.path_mtu) attributes.path_mtu = wanted;  // never above what the path carries
    }
    if (settings_.gid_index >= 0) attributes.ah_attr.grh.sgid_index = static_cast<std::uint8_t>(settings_.gid_index);
  }
  if (state == IBV_QPS_RTS) attributes.rnr_retry = 0;  // credits make receiver-not-ready impossible: never retry
  int result = ibv_modify_qp(qp, &attributes, mask);
  if (result != 0) {
    error = "ibv_modify_qp to state " + std::to_string(static_cast<int>(state)) + ": " + errno_text(result);
    return false;
  }
  return true;
}

// ---- send side ------------------------------------------------------------------------------------------

SendStatus IbvTransport::post(PeerId peer, mem::Ref& frame) noexcept {
  if (stopped_.load(std::memory_order_relaxed) || peer >= outgoing_count_.load(std::memory_order_acquire))
    return SendStatus::no_route;
  Outgoing& c = *outgoing_[peer];
  std::lock_guard lock(c.mutex);
  if (c.state == Outgoing::State::down && c.ever_up) {
    c.counters.errors.fetch_add(1, std::memory_order_relaxed);
    frame.reset();
    return SendStatus::error;
  }
  bool never_up = c.state == Outgoing::State::idle || (c.state == Outgoing::State::down && !c.ever_up);
  if (never_up && !c.connect_requested && !settings_.connect_at_start) {  // first use, or after a failed first try
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

void IbvTransport::pump(Outgoing& c) noexcept {
  SendLink* link = c.link;
  if (link == nullptr || !link->connected || !link->failure.empty()) return;
  while (!c.queue.empty()) {
    if (link->credits.available() == 0) {
      if (!c.waiting_for_credits) c.credit_waits.fetch_add(1, std::memory_order_relaxed);
      c.waiting_for_credits = true;
      return;
    }
    if (link->ops_posted - link->ops_retired >= link->ops.size()) return;  // a completion pumps again
    pt::MessagePieces pieces;
    pt::SendCursor cursor = c.cursor;
    bool last = pt::next_message(c.queue.front(), cursor, link->credits.buffer_size(), max_sge_, registrar_slot_, pieces);
    ibv_sge sge[pt::MessagePieces::kMaxPieces];
    for (std::size_t i = 0; i < pieces.count; ++i) {
      sge[i].addr = reinterpret_cast<std::uintptr_t>(pieces.iov[i].iov_base);
      sge[i].length = static_cast<std::uint32_t>(pieces.iov[i].iov_len);
      sge[i].lkey = pieces.local_keys[i];
    }
    std::size_t slot = link->ops_posted % link->ops.size();
    ibv_send_wr wr{};
    wr.wr_id = work_id(link->serial, static_cast<std::uint32_t>(slot));
    wr.sg_list = sge;
    wr.num_sge = static_cast<int>(pieces.count);
    wr.opcode = IBV_WR_SEND_WITH_IMM;
    wr.imm_data = htonl(link->credit_buffers_posted);
    bool inlined = pieces.bytes <= link->max_inline && pieces.bytes <= settings_.inline_threshold;
    // The frame's blocks may go back at post time only when the whole frame went inline as this one message:
    // an inline tail of a frame cut into several messages says nothing about the earlier ones, which the
    // device may not have read yet.
    const bool whole_frame_inline = inlined && last && c.cursor.at_frame_start();
    // Completions are asked for sparingly (each wakes the send thread): on an RC queue pair one completion
    // says every earlier message is done too. One is needed every quarter of the ring, so that slots come
    // back; when the ring is about to be full; and when the queue runs empty while this message or an earlier
    // unsignaled one still keeps a frame's blocks, so that they go back to their pool without waiting for
    // more traffic (a small inline frame last in the queue must not leave a large one before it pinned).
    const bool holds_blocks = last && !whole_frame_inline;
    const std::uint64_t in_flight = link->ops_posted + 1 - link->ops_retired;
    const bool signal = link->unsignaled + 1 >= std::max<std::size_t>(1, link->ops.size() / 4) ||
                        in_flight >= link->ops.size() ||
                        (last && c.queue.size() == 1 && (holds_blocks || link->unsignaled_hold_blocks));
    wr.send_flags = signal ? IBV_SEND_SIGNALED : 0;
    if (inlined) wr.send_flags |= IBV_SEND_INLINE;
    ibv_send_wr* bad = nullptr;
    int result = ibv_post_send(link->qp, &wr, &bad);
    if (result != 0) {
      link->failure = "ibv_post_send: " + errno_text(result);
      send_attention_.store(true, std::memory_order_release);
      wake(send_waiter_);
      return;
    }
    c.waiting_for_credits = false;
    link->unsignaled = signal ? 0 : link->unsignaled + 1;
    link->unsignaled_hold_blocks = !signal && (link->unsignaled_hold_blocks || holds_blocks);
    SendOp& op = link->ops[slot];
    op.sequence = link->ops_posted;
    if (last) {
      op.frame_bytes = c.queue.front().total_size();
      op.frame = c.queue.take_front();
      if (whole_frame_inline) {
        // The device copied the bytes into the work request: the blocks can go back now.
        c.inline_frames.fetch_add(1, std::memory_order_relaxed);
        op.frame.reset();
      }
    }
    c.cursor = cursor;
    ++link->ops_posted;
    link->credits.consume();
  }
}

bool IbvTransport::post_credit_receive(SendLink& link, std::size_t index, std::string& error) {
  mem::Ref& buffer = link.credit_buffers[index];
  if (!buffer) buffer = credit_pool_->allocate(kCreditBufferSize);
  if (!buffer) {
    error = "no buffer for credit messages (pool pt/ibv/credit is empty)";
    return false;
  }
  ibv_sge sge{};
  sge.addr = reinterpret_cast<std::uintptr_t>(buffer.data());
  sge.length = static_cast<std::uint32_t>(buffer.size());
  sge.lkey = static_cast<std::uint32_t>(buffer.head()->key(registrar_slot_).key);
  ibv_recv_wr wr{};
  wr.wr_id = work_id(link.serial, kCreditTag | static_cast<std::uint32_t>(index));
  wr.sg_list = &sge;
  wr.num_sge = 1;
  ibv_recv_wr* bad = nullptr;
  int result = ibv_post_recv(link.qp, &wr, &bad);
  if (result != 0) {
    error = "ibv_post_recv: " + errno_text(result);
    return false;
  }
  ++link.credit_buffers_posted;
  return true;
}

void IbvTransport::start_connect(Outgoing& c) {
  c.connect_requested = false;
  std::size_t need = send_depth_ + kCreditBuffers;
  auto link = std::make_unique<SendLink>();
  link->owner = &c;
  link->serial = next_link_serial_++;
  if (next_link_serial_ == 0) next_link_serial_ = 1;
  link->ops.resize(send_depth_);
  link->credit_buffers.resize(kCreditBuffers);
  std::string error;
  if (send_cq_use_ + need > send_cq_size_) {
    error = "the send completion queue (" + std::to_string(send_cq_size_) + " entries) has no room for another " +
            "connection: lower sendDepth";
  } else if (rdma_create_id(send_events_, &link->id, reinterpret_cast<void*>(static_cast<std::uintptr_t>(link->serial)),
                            RDMA_PS_TCP) != 0) {
    error = "rdma_create_id: " + errno_text(errno);
  } else if (rdma_resolve_addr(link->id, nullptr, reinterpret_cast<sockaddr*>(&c.address),
                               static_cast<int>(settings_.resolve_timeout.count())) != 0) {
    error = "rdma_resolve_addr: " + errno_text(errno);
  }
  SendLink* raw = link.get();
  send_cq_use_ += need;
  links_.emplace(raw->serial, std::move(link));
  c.link = raw;
  c.state = Outgoing::State::connecting;
  if (!error.empty()) {
    bool went_down = false;
    teardown(c, error, went_down);
  }
}

void IbvTransport::teardown(Outgoing& c, const std::string& reason, bool& went_down) {
  SendLink* link = c.link;
  bool was_up = c.state == Outgoing::State::up;
  if (link != nullptr) {
    auto found = links_.find(link->serial);
    // The QP goes first: after ibv_destroy_qp the device reads none of the blocks released below.
    if (link->id != nullptr && link->connected) rdma_disconnect(link->id);
    if (link->qp != nullptr) ibv_destroy_qp(link->qp);
    if (link->id != nullptr) rdma_destroy_id(link->id);
    std::size_t in_flight_frames = 0;
    for (SendOp& op : link->ops)
      if (op.frame) ++in_flight_frames;
    if (was_up) c.counters.errors.fetch_add(1 + in_flight_frames, std::memory_order_relaxed);
    if (found != links_.end()) {
      send_cq_use_ -= std::min(send_cq_use_, send_depth_ + kCreditBuffers);
      links_.erase(found);  // its frames and credit buffers go back to their pools here
    }
  }
  c.link = nullptr;
  // What was not sent is lost with the connection, counted, whether or not it ever came up (frames posted on
  // first use to a peer that does not listen yet); its blocks go back.
  c.counters.errors.fetch_add(c.queue.size(), std::memory_order_relaxed);
  c.queue.clear();
  c.cursor = pt::SendCursor{};
  c.waiting_for_credits = false;
  c.state = Outgoing::State::down;
  c.backoff = std::clamp(c.backoff * 2, settings_.reconnect_min, settings_.reconnect_max);
  c.retry_at = Clock::now() + c.backoff;
  went_down = was_up;
  host_.log(was_up ? LogLevel::warning : LogLevel::debug, "connection to " + c.remote.text() + " lost: " + reason);
}

void IbvTransport::on_send_completion(const ibv_wc& wc) {
  auto found = links_.find(work_serial(wc.wr_id));
  if (found == links_.end()) return;  // a completion of a connection torn down: its blocks went back then
  SendLink* link = found->second.get();
  Outgoing& c = *link->owner;
  std::uint32_t index = work_index(wc.wr_id);
  bool went_down = false;
  bool notify = false;
  {
    std::lock_guard lock(c.mutex);
    if (c.link != link) return;
    if (wc.status != IBV_WC_SUCCESS) {
      std::string what = (index & kCreditTag) != 0 ? "credit receive" : "send";
      if (wc.status == IBV_WC_WR_FLUSH_ERR) {
        teardown(c, "the queue pair was flushed (connection closed)", went_down);
      } else {
        completion_errors_.fetch_add(1, std::memory_order_relaxed);
        qp_errors_.fetch_add(1, std::memory_order_relaxed);
        teardown(c, what + " failed: " + ibv_wc_status_str(wc.status) + " (vendor error " + std::to_string(wc.vendor_err) + ")",
                 went_down);
      }
    } else if ((index & kCreditTag) != 0) {
      std::size_t buffer_index = index & ~kCreditTag;
      pt::CreditMessage message;
      mem::Ref& buffer = link->credit_buffers[buffer_index];
      bool valid = buffer && pt::decode_credit(buffer.data(), wc.byte_len, message);
      std::string error;
      if (!valid) {
        teardown(c, "a malformed credit message from the receiver", went_down);
      } else if (!post_credit_receive(*link, buffer_index, error)) {
        teardown(c, error, went_down);
      } else {
        // Re-posted before the credits are used: every data message they pay for tells the receiver.
        link->credits.grant(message);
      }
    } else {
      // This message and every one posted before it are done (RC completes in order): retire them all, in
      // posting order, so that a frame's blocks go back only when every message before them is sent.
      const std::uint64_t done_through = link->ops[index].sequence;
      while (link->ops_retired < link->ops_posted && link->ops_retired <= done_through) {
        SendOp& oldest = link->ops[link->ops_retired % link->ops.size()];
        if (oldest.frame_bytes != 0) {
          c.counters.frames.fetch_add(1, std::memory_order_relaxed);
          c.counters.bytes.fetch_add(oldest.frame_bytes, std::memory_order_relaxed);
          oldest.frame_bytes = 0;
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

void IbvTransport::on_send_event(rdma_cm_event& event) {
  auto serial = static_cast<std::uint32_t>(reinterpret_cast<std::uintptr_t>(event.id->context));
  auto found = links_.find(serial);
  if (found == links_.end()) return;
  SendLink* link = found->second.get();
  Outgoing& c = *link->owner;
  bool came_up = false, went_down = false;
  {
    std::lock_guard lock(c.mutex);
    if (c.link != link) return;
    std::string error;
    switch (event.event) {
      case RDMA_CM_EVENT_ADDR_RESOLVED:
        if (link->id->verbs != context_)
          error = "the route to " + c.remote.text() + " goes through device " + device_name(link->id->verbs) +
                  ", ptibv uses " + device_name(context_);
        else if (settings_.port != 0 && link->id->port_num != settings_.port)
          error = c.remote.text() + " is reached through port " + std::to_string(link->id->port_num) +
                  " of " + device_name(context_) + ", not port " + std::to_string(settings_.port);
        else if (rdma_resolve_route(link->id, static_cast<int>(settings_.resolve_timeout.count())) != 0)
          error = "rdma_resolve_route: " + errno_text(errno);
        break;
      case RDMA_CM_EVENT_ROUTE_RESOLVED: {
        link->qp = make_qp(link->id, true, link->max_inline, error);
        if (link->qp == nullptr) break;
        // Somewhere for the receiver's credit messages to land before the connection is even up.
        for (std::size_t i = 0; i < link->credit_buffers.size() && error.empty(); ++i) post_credit_receive(*link, i, error);
        if (!error.empty()) break;
        std::byte request[kConnectRequestSize];
        encode_request({link->credit_buffers_posted}, request);
        rdma_conn_param param{};
        param.private_data = request;
        param.private_data_len = static_cast<std::uint8_t>(sizeof request);
        param.retry_count = 7;
        param.rnr_retry_count = 0;
        param.qp_num = link->qp->qp_num;
        if (rdma_connect(link->id, &param) != 0) error = "rdma_connect: " + errno_text(errno);
        break;
      }
      case RDMA_CM_EVENT_CONNECT_RESPONSE: {
        ConnectReply reply;
        error = decode_reply(event.param.conn.private_data, event.param.conn.private_data_len, reply);
        if (!error.empty()) {
          error = "the peer's reply: " + error;
          rdma_reject(link->id, nullptr, 0);
          break;
        }
        if (!move_qp(link->id, link->qp, IBV_QPS_RTR, error) || !move_qp(link->id, link->qp, IBV_QPS_RTS, error)) {
          rdma_reject(link->id, nullptr, 0);
          break;
        }
        if (rdma_establish(link->id) != 0) {
          error = "rdma_establish: " + errno_text(errno);
          break;
        }
        link->credits.grant({reply.buffer_size, reply.posted_total});
        link->connected = true;
        if (c.ever_up) c.counters.reconnects.fetch_add(1, std::memory_order_relaxed);
        c.ever_up = true;
        c.state = Outgoing::State::up;
        c.backoff = std::chrono::milliseconds(0);
        came_up = true;
        pump(c);
        break;
      }
      case RDMA_CM_EVENT_ESTABLISHED:
        break;  // the active side learns it at CONNECT_RESPONSE
      case RDMA_CM_EVENT_REJECTED:
        // Status 28 (IB_CM_REJ_CONSUMER_DEFINED) is the peer's rdma_reject; others come from the CM or device.
        error = "rejected by " + c.remote.text() + " (reject reason " + std::to_string(event.status) +
                (event.status == 28 ? ": refused by the receiver, see its log)" : ")");
        break;
      case RDMA_CM_EVENT_DISCONNECTED:
        error = "closed by the peer";
        break;
      case RDMA_CM_EVENT_TIMEWAIT_EXIT:
        break;
      default:
        error = event_text(event);
        break;
    }
    if (!error.empty()) teardown(c, error, went_down);
  }
  if (came_up) host_.connection_changed(c.id, true, "connected to " + c.remote.text());
  if (went_down) host_.connection_changed(c.id, false, "connection lost");
}

void IbvTransport::check_outgoing(Clock::time_point now, Clock::time_point& next_check) {
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
      if (c.state == Outgoing::State::down) next_check = std::min(next_check, c.retry_at);
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

void IbvTransport::send_loop(std::stop_token stop) {
  auto next_check = Clock::now();
  ibv_wc completions[kCompletionBatch];
  while (!stop.stop_requested()) {
    bool worked = false;
    for (int round = 0; round < kReadRounds; ++round) {
      int count = ibv_poll_cq(send_cq_, kCompletionBatch, completions);
      if (count <= 0) break;
      worked = true;
      for (int i = 0; i < count; ++i) on_send_completion(completions[i]);
      if (count < kCompletionBatch) break;
    }
    CmEvent event;
    while (next_cm_event(send_events_, event)) {
      worked = true;
      on_send_event(event.event);
    }
    auto now = Clock::now();
    if (send_attention_.exchange(false, std::memory_order_acq_rel) || now >= next_check) {
      next_check = now + std::chrono::milliseconds(100);
      check_outgoing(now, next_check);
    }
    if (worked || settings_.busy_poll) continue;
    auto limit = std::chrono::duration_cast<std::chrono::milliseconds>(next_check - Clock::now()) + std::chrono::milliseconds(1);
    wait(send_waiter_, std::min<std::chrono::milliseconds>(limit, std::chrono::milliseconds(100)));
  }
}

// ---- receive side ---------------------------------------------------------------------------------------

void IbvTransport::accept(rdma_cm_id* id, const rdma_conn_param& param) {
  std::string remote = address_text(rdma_get_peer_addr(id));
  auto refuse = [&](const std::string& reason) {
    rdma_reject(id, nullptr, 0);
    rdma_destroy_id(id);
    refused_requests_.fetch_add(1, std::memory_order_relaxed);
    host_.log(LogLevel::warning, "refused a connection request from " + remote + ": " + reason);
  };
  ConnectRequest request;
  std::string error = decode_request(param.private_data, param.private_data_len, request);
  if (!error.empty()) return refuse(error);
  if (id->verbs != context_) return refuse("it arrived on device " + device_name(id->verbs));
  if (receive_cq_use_ + recv_depth_ + kCreditSends > receive_cq_size_)
    return refuse("the receive completion queue is full (" + std::to_string(receive_cq_size_) + " entries)");

  auto connection = std::make_unique<Incoming>(std::max<std::size_t>(1, recv_depth_ / 4));
  Incoming& c = *connection;
  c.remote = remote;
  c.serial = next_incoming_serial_++;
  c.cm_id = id;
  c.allowance.start(request.credit_buffers);
  std::uint32_t max_inline = 0;
  c.qp = make_qp(id, false, max_inline, error);
  if (c.qp == nullptr) {
    c.cm_id = nullptr;
    return refuse(error);
  }
  id->context = reinterpret_cast<void*>(static_cast<std::uintptr_t>(c.serial));
  {
    std::lock_guard peers(peers_mutex_);
    c.id = next_incoming_id_++;
    incoming_.push_back(std::move(connection));
  }
  incoming_by_qp_[c.qp->qp_num] = &c;
  receive_cq_use_ += recv_depth_ + kCreditSends;
  // Buffers go up before the connection does: the sender may start as soon as it has the reply.
  replenish(c);
  if (c.closed) return;
  if (!move_qp(id, c.qp, IBV_QPS_RTR, error) || !move_qp(id, c.qp, IBV_QPS_RTS, error)) {
    rdma_reject(id, nullptr, 0);
    refused_requests_.fetch_add(1, std::memory_order_relaxed);
    close_incoming(c, error, Ending::normal);
    return;
  }
  std::byte reply[kConnectReplySize];
  encode_reply({static_cast<std::uint32_t>(settings_.recv_buffer_size), c.credits.report()}, reply);
  rdma_conn_param answer{};
  answer.private_data = reply;
  answer.private_data_len = static_cast<std::uint8_t>(sizeof reply);
  answer.retry_count = 7;
  answer.rnr_retry_count = 0;
  answer.qp_num = c.qp->qp_num;
  answer.srq = srq_ != nullptr ? 1 : 0;
  if (rdma_accept(id, &answer) != 0) {
    refused_requests_.fetch_add(1, std::memory_order_relaxed);
    close_incoming(c, "rdma_accept: " + errno_text(errno), Ending::normal);
  }
}

bool IbvTransport::post_receive(Incoming* owner, mem::Ref&& buffer, std::string& error) {
  std::uint32_t index = 0;
  if (free_slots_.empty()) {
    index = static_cast<std::uint32_t>(slots_.size());
    slots_.emplace_back();
  } else {
    index = free_slots_.back();
    free_slots_.pop_back();
  }
  ReceiveSlot& slot = slots_[index];
  ibv_sge sge{};
  sge.addr = reinterpret_cast<std::uintptr_t>(buffer.data());
  sge.length = static_cast<std::uint32_t>(buffer.size());
  sge.lkey = static_cast<std::uint32_t>(buffer.head()->key(registrar_slot_).key);
  ibv_recv_wr wr{};
  wr.wr_id = work_id(slot.generation, index);
  wr.sg_list = &sge;
  wr.num_sge = 1;
  ibv_recv_wr* bad = nullptr;
  int result = owner != nullptr && srq_ == nullptr ? ibv_post_recv(owner->qp, &wr, &bad) : ibv_post_srq_recv(srq_, &wr, &bad);
  if (result != 0) {
    free_slots_.push_back(index);
    error = (srq_ != nullptr ? "ibv_post_srq_recv: " : "ibv_post_recv: ") + errno_text(result);
    return false;
  }
  slot.buffer = std::move(buffer);
  slot.owner = srq_ != nullptr ? nullptr : owner;
  receive_buffers_posted_.fetch_add(1, std::memory_order_relaxed);
  if (srq_ != nullptr) ++srq_posted_;
  return true;
}

void IbvTransport::replenish(Incoming& c) {
  while (!c.closed && c.posted - c.consumed < recv_depth_) {
    if (srq_ != nullptr && srq_spare_ > 0) {
      // A buffer left in the shared queue by a closed connection: it is this one's now.
      --srq_spare_;
    } else {
      if (srq_ != nullptr && srq_posted_ >= srq_capacity_) {
        c.waiting_for_pool = true;  // the shared queue is full: a message arriving frees room
        return;
      }
      mem::Ref buffer = receive_pool_->allocate(settings_.recv_buffer_size);
      if (!buffer) {
        // Back-pressure: no credits go out for buffers we do not have; the pool calls when it has blocks.
        if (!c.waiting_for_pool) receive_pool_waits_.fetch_add(1, std::memory_order_relaxed);
        c.waiting_for_pool = true;
        return;
      }
      std::string error;
      if (!post_receive(&c, std::move(buffer), error)) {
        close_incoming(c, error, Ending::normal);
        return;
      }
    }
    c.waiting_for_pool = false;
    ++c.posted;
    c.credits.posted();
  }
}

void IbvTransport::send_credits(Incoming& c) {
  while (c.up && !c.closed && c.credits.report_due() && c.credit_sends < kCreditSends && c.allowance.available() > 0) {
    std::byte message[pt::kCreditMessageSize];
    pt::encode_credit({static_cast<std::uint32_t>(settings_.recv_buffer_size), c.credits.posted_total()}, message);
    ibv_sge sge{};
    sge.addr = reinterpret_cast<std::uintptr_t>(message);
    sge.length = static_cast<std::uint32_t>(sizeof message);
    ibv_send_wr wr{};
    wr.wr_id = work_id(c.serial, kCreditTag);
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_SEND;
    wr.send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE;  // inline: the message lives on this stack
    ibv_send_wr* bad = nullptr;
    int result = ibv_post_send(c.qp, &wr, &bad);
    if (result != 0) {
      close_incoming(c, "sending credits: ibv_post_send: " + errno_text(result), Ending::normal);
      return;
    }
    ++c.credit_sends;
    c.allowance.sent();
    c.credits.report();
    credit_messages_.fetch_add(1, std::memory_order_relaxed);
  }
}

void IbvTransport::close_incoming(Incoming& c, const std::string& reason, Ending ending) {
  if (c.closed) return;
  bool was_up = c.up;
  c.closed = true;
  c.up = false;
  if (c.qp != nullptr) {
    incoming_by_qp_.erase(c.qp->qp_num);
    if (c.cm_id != nullptr) rdma_disconnect(c.cm_id);
    ibv_destroy_qp(c.qp);  // after this the device writes into none of this connection's buffers
    receive_cq_use_ -= std::min(receive_cq_use_, recv_depth_ + kCreditSends);
  }
  c.qp = nullptr;
  if (c.cm_id != nullptr) rdma_destroy_id(c.cm_id);
  c.cm_id = nullptr;
  // Its buffers: those in its own receive queue go back to the pool; those in the shared queue stay
  // posted there for the next connection.
  if (srq_ != nullptr) {
    std::uint64_t arrived = c.consumed + c.held.size();
    srq_spare_ += c.posted > arrived ? c.posted - arrived : 0;
  }
  for (std::uint32_t i = 0; i < slots_.size(); ++i) {
    ReceiveSlot& slot = slots_[i];
    if (slot.owner != &c) continue;
    slot.buffer.reset();
    receive_buffers_posted_.fetch_sub(1, std::memory_order_relaxed);
    slot.owner = nullptr;
    ++slot.generation;
    free_slots_.push_back(i);
  }
  c.held.clear();
  c.assembling.data.reset();  // a frame half received goes back to the pool
  c.have = 0;
  c.pending.data.reset();
  c.has_pending = false;
  {
    std::lock_guard peers(peers_mutex_);
    retired_frames_received_ += c.counters.frames.load(std::memory_order_relaxed);
    retired_bytes_received_ += c.counters.bytes.load(std::memory_order_relaxed);
  }
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

bool IbvTransport::deliver(Incoming& c, Frame& frame) {
  std::size_t bytes = frame.header.total_length;
  Tid target = frame.header.target;
  switch (host_.deliver(std::move(frame), c.id)) {
    case DeliverStatus::accepted:
      c.counters.frames.fetch_add(1, std::memory_order_relaxed);
      c.counters.bytes.fetch_add(bytes, std::memory_order_relaxed);
      return true;
    case DeliverStatus::busy:
      // The target's queue is full: hold the frame and the messages behind it. No buffer is re-posted
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

bool IbvTransport::take_message(Incoming& c, mem::Ref&& buffer, std::size_t length) {
  ++c.consumed;
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

void IbvTransport::consume_held(Incoming& c) {
  while (!c.closed && !c.paused && !c.held.empty()) {
    auto [buffer, length] = std::move(c.held.front());
    c.held.pop_front();
    if (!take_message(c, std::move(buffer), length)) return;
  }
}

void IbvTransport::on_receive_completion(const ibv_wc& wc) {
  std::uint32_t index = work_index(wc.wr_id);
  if (index == kCreditTag) {  // a credit message we sent
    auto found = incoming_by_qp_.find(wc.qp_num);
    if (found == incoming_by_qp_.end()) return;
    Incoming& c = *found->second;
    if (c.credit_sends > 0) --c.credit_sends;
    if (wc.status != IBV_WC_SUCCESS) {
      if (wc.status != IBV_WC_WR_FLUSH_ERR) {
        completion_errors_.fetch_add(1, std::memory_order_relaxed);
        qp_errors_.fetch_add(1, std::memory_order_relaxed);
      }
      close_incoming(c, std::string("credit send failed: ") + ibv_wc_status_str(wc.status),
                     c.have > 0 || c.has_pending ? Ending::truncated : Ending::normal);
      return;
    }
    send_credits(c);
    return;
  }
  if (index >= slots_.size() || slots_[index].generation != work_serial(wc.wr_id)) return;  // of a closed QP
  ReceiveSlot& slot = slots_[index];
  mem::Ref buffer = std::move(slot.buffer);
  receive_buffers_posted_.fetch_sub(1, std::memory_order_relaxed);
  slot.owner = nullptr;
  ++slot.generation;
  free_slots_.push_back(index);
  if (srq_ != nullptr && srq_posted_ > 0) --srq_posted_;
  auto found = incoming_by_qp_.find(wc.qp_num);
  if (found == incoming_by_qp_.end()) {
    if (srq_ != nullptr && wc.status == IBV_WC_SUCCESS && srq_spare_ > 0) --srq_spare_;  // a closed QP's late message
    return;  // the buffer goes back to the pool
  }
  Incoming& c = *found->second;
  if (c.closed) return;
  if (wc.status != IBV_WC_SUCCESS) {
    Ending ending = c.have > 0 || c.has_pending ? Ending::truncated : Ending::normal;
    if (wc.status == IBV_WC_WR_FLUSH_ERR) {
      close_incoming(c, "closed by the peer", ending);
    } else {
      completion_errors_.fetch_add(1, std::memory_order_relaxed);
      qp_errors_.fetch_add(1, std::memory_order_relaxed);
      close_incoming(c, std::string("receive failed: ") + ibv_wc_status_str(wc.status), ending);
    }
    return;
  }
  if ((wc.wc_flags & IBV_WC_WITH_IMM) == 0 || wc.opcode != IBV_WC_RECV) {
    close_incoming(c, "bad frame: a message without the sender's credit count (not a ptibv sender?)", Ending::bad);
    return;
  }
  c.credits.received();
  c.allowance.update(ntohl(wc.imm_data));
  if (c.consumed + c.held.size() >= c.posted) {
    close_incoming(c, "bad stream: the sender sent more messages than it had credits for", Ending::bad);
    return;
  }
  if (c.paused || !c.held.empty()) {
    c.held.emplace_back(std::move(buffer), wc.byte_len);
  } else if (!take_message(c, std::move(buffer), wc.byte_len)) {
    if (c.closed) return;
  }
  replenish(c);
  send_credits(c);
}

void IbvTransport::on_receive_event(rdma_cm_event& event) {
  if (event.event == RDMA_CM_EVENT_CONNECT_REQUEST) {
    accept(event.id, event.param.conn);
    return;
  }
  if (event.id == listener_) {
    if (event.event == RDMA_CM_EVENT_DEVICE_REMOVAL) host_.log(LogLevel::error, "device removed under the listener");
    return;
  }
  auto serial = static_cast<std::uint32_t>(reinterpret_cast<std::uintptr_t>(event.id->context));
  Incoming* found = nullptr;
  for (auto& c : incoming_)
    if (c->serial == serial && !c->closed) found = c.get();
  if (found == nullptr) return;
  Incoming& c = *found;
  switch (event.event) {
    case RDMA_CM_EVENT_ESTABLISHED:
      c.up = true;
      accepted_.fetch_add(1, std::memory_order_relaxed);
      host_.connection_changed(c.id, true, "accepted from " + c.remote);
      send_credits(c);
      break;
    case RDMA_CM_EVENT_DISCONNECTED: {
      // Messages that arrived before the peer went may still be in the completion queue: take them first.
      ibv_wc completions[kCompletionBatch];
      int count = 0;
      while ((count = ibv_poll_cq(receive_cq_, kCompletionBatch, completions)) > 0)
        for (int i = 0; i < count; ++i) on_receive_completion(completions[i]);
      if (!c.closed) close_incoming(c, "closed by the peer", c.have > 0 || c.has_pending ? Ending::truncated : Ending::normal);
      break;
    }
    case RDMA_CM_EVENT_TIMEWAIT_EXIT:
      break;
    default:  // CONNECT_ERROR, UNREACHABLE, DEVICE_REMOVAL, ...
      close_incoming(c, event_text(event), c.have > 0 ? Ending::truncated : Ending::normal);
      break;
  }
}

void IbvTransport::on_async_events() {
  ibv_async_event event{};
  while (ibv_get_async_event(context_, &event) == 0) {
    async_events_.fetch_add(1, std::memory_order_relaxed);
    host_.log(LogLevel::warning, std::string("device event: ") + ibv_event_type_str(event.event_type));
    ibv_ack_async_event(&event);
  }
}

void IbvTransport::resume_incoming() {
  for (auto& connection : incoming_) {
    Incoming& c = *connection;
    if (c.closed) continue;
    if (c.paused && c.has_pending) {
      c.has_pending = false;
      c.paused = false;
      if (!deliver(c, c.pending)) continue;
      consume_held(c);
    }
    if (c.waiting_for_pool || c.posted - c.consumed < recv_depth_) replenish(c);
    send_credits(c);
  }
}

void IbvTransport::receive_loop(std::stop_token stop) {
  ibv_wc completions[kCompletionBatch];
  auto next_async_check = Clock::now();
  while (!stop.stop_requested()) {
    bool worked = false;
    for (int round = 0; round < kReadRounds; ++round) {
      int count = ibv_poll_cq(receive_cq_, kCompletionBatch, completions);
      if (count <= 0) break;
      worked = true;
      for (int i = 0; i < count; ++i) on_receive_completion(completions[i]);
      if (count < kCompletionBatch) break;
    }
    CmEvent event;
    while (next_cm_event(receive_events_, event)) {
      worked = true;
      on_receive_event(event.event);
    }
    if (resume_requested_.exchange(false, std::memory_order_acq_rel)) resume_incoming();
    auto now = Clock::now();
    if (receive_waiter_.extra_ready || now >= next_async_check) {
      receive_waiter_.extra_ready = false;
      next_async_check = now + std::chrono::milliseconds(100);
      on_async_events();
    }
    if (worked || settings_.busy_poll) continue;
    wait(receive_waiter_, std::chrono::milliseconds(100));
  }
}

// ---- reports --------------------------------------------------------------------------------------------

void IbvTransport::report(MetricSink& sink) const {
  TransportTotals totals;
  std::uint64_t credit_waits = 0;
  std::uint64_t inline_frames = 0;
  {
    std::lock_guard peers(peers_mutex_);
    for (const auto& c : outgoing_) {
      totals.add_outgoing(c->counters);
      credit_waits += c->credit_waits.load(std::memory_order_relaxed);
      inline_frames += c->inline_frames.load(std::memory_order_relaxed);
    }
    for (const auto& c : incoming_) {
      if (c->closed) continue;  // their frames are in the retired totals
      totals.add_incoming(c->counters);
      totals.incoming_connections += 1;
    }
    totals.frames_received += retired_frames_received_;
    totals.bytes_received += retired_bytes_received_;
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
  sink.counter("credit_messages", d(credit_messages_.load()), "credit messages sent to senders");
  sink.counter("inline_frames", d(inline_frames), "frames sent inline (copied into the work request)");
  sink.counter("connection_requests_refused", d(refused_requests_.load()), "connection requests refused or failed");
  sink.counter("completion_errors", d(completion_errors_.load()), "work requests that completed with an error");
  sink.counter("qp_errors", d(qp_errors_.load()), "connections torn down by a queue pair error");
  sink.counter("async_events", d(async_events_.load()), "asynchronous device events (logged)");
  sink.counter("registrations", d(registrar_ ? registrar_->registrations() : 0), "pool chunks registered (ibv_reg_mr)");
  sink.gauge("registered_bytes", d(registrar_ ? registrar_->registered_bytes() : 0), "bytes of pool memory registered now");
  sink.counter("registration_seconds", registrar_ ? registrar_->registration_seconds() : 0, "time spent in ibv_reg_mr");
  sink.counter("registration_failures", d(registrar_ ? registrar_->failures() : 0), "chunks ibv_reg_mr refused");
  sink.gauge("busy_poll", settings_.busy_poll ? 1 : 0, "1 when completion threads busy-poll, 0 when they wait on epoll");
  sink.gauge("shared_receive_queue", srq_ != nullptr ? 1 : 0, "1 when receive buffers go to a shared receive queue");
  sink.gauge("receive_buffers_posted", d(receive_buffers_posted_.load(std::memory_order_relaxed)),
             "receive buffers posted now (per connection, or in the shared receive queue)");
  sink.gauge("numa_node", numa_node_, "NUMA node of ptibv's pools (-1: as the policy says)");
}

std::vector<ConnectionInfo> IbvTransport::connections() const {
  std::vector<ConnectionInfo> list;
  std::lock_guard peers(peers_mutex_);
  for (const auto& c : outgoing_) {
    ConnectionInfo info;
    info.peer = c->id;
    info.outgoing = true;
    info.remote = c->remote.hostname + ":" + std::to_string(c->remote.port) + " (out)";
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

}  // namespace daqx::ptibv
