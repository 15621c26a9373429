// ptibv implementation: the device, queue pairs and their connection protocol, and posting messages,
// receive buffers (per QP or in a shared receive queue) and credit messages with verbs. Connection handling,
// credits, assembly and delivery are pt/base's.
#include "ibv_transport.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <sys/epoll.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "daqx/pt/host_resolver.hpp"

namespace daqx::ptibv {
namespace {

using pt::address_text;
using pt::errno_text;
using State = pt::OutgoingConnection::State;
constexpr int kReadRounds = 8;  // batches per round before the thread looks at events and timers
using pt::kCreditBufferSize;
constexpr std::size_t kMaxCompletionQueue = 65536;
constexpr std::uint32_t kCreditTag = 0x80000000u;  // low half of a wr_id: a credit message, not data
constexpr std::chrono::milliseconds kAsyncCheckInterval{100};

std::uint64_t work_id(std::uint32_t serial, std::uint32_t index) {
  return (static_cast<std::uint64_t>(serial) << 32) | index;
}
std::uint32_t work_serial(std::uint64_t wr_id) { return static_cast<std::uint32_t>(wr_id >> 32); }
std::uint32_t work_index(std::uint64_t wr_id) { return static_cast<std::uint32_t>(wr_id); }

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

// One round of a completion thread: up to kReadRounds batches of completions from each of its queues, then
// every rdma_cm event. Returns whether there was anything, so the thread sleeps only when there was not.
template <typename Completion, typename Event>
bool reap(CompletionQueues& queues, rdma_event_channel* events, Completion&& completion, Event&& event) {
  bool worked = queues.poll(kReadRounds, completion);
  CmEvent copy;
  while (next_cm_event(events, copy)) {
    worked = true;
    event(copy.event);
  }
  return worked;
}

}  // namespace

// ---- life cycle -----------------------------------------------------------------------------------------

IbvTransport::IbvTransport(TransportHost& host)
    : MessageTransport(host, &ptibv::describe), settings_(Settings::from(host.params())) {
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
}

IbvTransport::~IbvTransport() {
  stop();
  if (send_events_ != nullptr) rdma_destroy_event_channel(send_events_);
  if (receive_events_ != nullptr) rdma_destroy_event_channel(receive_events_);
}

void IbvTransport::refine_capabilities(TransportCapabilities& c) const {
  if (context_ != nullptr) c.gather_limit = gather_limit();  // what the device allows, now that it is open
}

ibv_context* IbvTransport::choose_device(const sockaddr* address) {
  std::string error;
  if (!settings_.device.empty()) {
    if (ibv_context* named = devices_->by_name(settings_.device)) return named;
    pt::SocketAddress ip = pt::resolve_address(settings_.device, 0);
    ibv_context* found = device_of_address(ip.get(), error);
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
  const int device_node = device_numa_node(context_);
  numa_node_ = settings_.numa == Settings::Numa::node     ? settings_.numa_node
               : settings_.numa == Settings::Numa::device ? device_node
                                                          : -1;

  // ptibv's own pools, near the device when the configuration says so.
  const pt::MessageSettings& m = message_settings();
  mem::PoolConfig receive = pt::receive_pool_config(m);
  receive.preferred_numa_node = numa_node_;
  receive.views = views_needed();
  receive_pool_ = &host().make_pool("recv", receive);
  mem::PoolConfig credit = pt::credit_pool_config();
  credit.preferred_numa_node = numa_node_;
  credit_pool_ = &host().make_pool("credit", credit);
  receive_pool_->on_available([this] { request_resume(); });

  pd_ = ibv_alloc_pd(context_);
  if (pd_ == nullptr) throw std::runtime_error("ibv_alloc_pd: " + errno_text(errno));
  // Every pool of the executive, now and later, is registered once per chunk: sends and receives name
  // each block's lkey without looking it up.
  register_memory(make_registrar(pd_));

  const std::size_t max_cqe = static_cast<std::size_t>(std::max(device_attr_.max_cqe, 64));
  const std::size_t cq_entries = std::min(max_cqe, kMaxCompletionQueue);
  const auto max_wr = static_cast<std::size_t>(std::max(device_attr_.max_qp_wr, 2));
  set_limits(static_cast<std::size_t>(device_attr_.max_sge), std::clamp<std::size_t>(m.send_depth, 1, max_wr - 1),
             std::clamp<std::size_t>(m.receive_depth, 2, max_wr));

  send_queues_.open(context_, cq_entries, !busy_polling());
  receive_queues_.open(context_, cq_entries, !busy_polling());
  cap_receive_budget(cq_entries / 2);  // the rest of the queue is for connections' first buffers and credits

  if (settings_.srq == Settings::Srq::automatic && device_attr_.max_srq > 0) {
    srq_capacity_ = std::min<std::size_t>(static_cast<std::size_t>(device_attr_.max_srq_wr), 16384);
    ibv_srq_init_attr attributes{};
    attributes.attr.max_wr = static_cast<std::uint32_t>(srq_capacity_);
    attributes.attr.max_sge = 1;
    srq_ = ibv_create_srq(pd_, &attributes);
    if (srq_ == nullptr) {
      host().log(LogLevel::warning, "ibv_create_srq: " + errno_text(errno) + ": receive buffers go to each connection");
      srq_capacity_ = 0;
    } else {
      srq_capacity_ = attributes.attr.max_wr;
      // Room in the shared queue for the budget and for every connection's first buffer besides.
      cap_receive_budget(srq_capacity_ / 2);
    }
  }
  // Receive completions pending at once: the budget's buffers, each connection's first buffer beyond it, and
  // its credit messages (counted per connection at accept).
  receive_cq_use_ = receive_budget();

  set_nonblocking(context_->async_fd);
  if (!busy_polling()) {
    send_waiter().add(send_queues_.channel_fd(), &send_queues_);
    send_waiter().add(send_events_->fd, &cm_marker_);
    receive_waiter().add(receive_queues_.channel_fd(), &receive_queues_);
    receive_waiter().add(receive_events_->fd, &cm_marker_);
    receive_waiter().add(context_->async_fd, &async_marker_);
  }
  host().log(LogLevel::info,
             "device " + device_name(context_) + " (NUMA node " + std::to_string(device_node) + "), pools " +
                 (numa_node_ >= 0 ? "on node " + std::to_string(numa_node_) : std::string("as the policy says")) + ", " +
                 std::to_string(gather_limit()) + " pieces per message, " + std::to_string(send_depth()) +
                 " sends in flight per connection, " + std::to_string(receive_budget()) +
                 " receive buffers shared by the incoming connections (" + std::to_string(connection_depth()) +
                 " each, at most " + std::to_string(receive_depth()) + ")" +
                 (srq_ != nullptr ? " in a shared receive queue of " + std::to_string(srq_capacity_) : std::string("")) +
                 ", completion queues of " + std::to_string(cq_entries) + " entries (" +
                 std::to_string(cq_entries / (send_depth() + kCreditBuffers)) + " outgoing connections each), " +
                 (busy_polling() ? "busy polling" : "completion channels"));
  start_threads();
}

IbvTransport::SleepCheck IbvTransport::arm(CompletionQueues& queues) {
  // Ask for an event on the next completion, then look once more: one that came in between would otherwise
  // wait for the one after it.
  return queues.arm() ? SleepCheck::look_again : SleepCheck::sleep;
}

void IbvTransport::on_send_ready(void* tag, std::uint32_t) {
  if (tag == &send_queues_) send_queues_.take_events();
}

void IbvTransport::on_receive_ready(void* tag, std::uint32_t) {
  if (tag == &receive_queues_) receive_queues_.take_events();
  if (tag == &async_marker_) async_ready_ = true;
}

void IbvTransport::listen(const EndpointAddress& local) {
  local_ = local;
  pt::SocketAddress address = pt::resolve_address(local.hostname, local.port);
  open_device(choose_device(address.get()));
  if (rdma_create_id(receive_events_, &listener_, nullptr, RDMA_PS_TCP) != 0)
    throw std::runtime_error("rdma_create_id: " + errno_text(errno));
  if (rdma_bind_addr(listener_, address.get()) != 0)
    throw std::runtime_error("rdma_bind_addr(" + local.text() + "): " + errno_text(errno));
  if (listener_->verbs != nullptr && listener_->verbs != context_)
    throw std::runtime_error("endpoint " + local.text() + " is on device " + device_name(listener_->verbs) +
                             ", ptibv uses " + device_name(context_));
  if (rdma_listen(listener_, 128) != 0) throw std::runtime_error("rdma_listen(" + local.text() + "): " + errno_text(errno));
  receive_waiter().wake();
}

void IbvTransport::stop_endpoints() noexcept {
  if (listener_ != nullptr) rdma_destroy_id(listener_);
  listener_ = nullptr;
  if (srq_ != nullptr) ibv_destroy_srq(srq_);
  srq_ = nullptr;
  slots_.clear();  // every posted receive buffer goes back
  free_slots_.clear();
  ibv_counters_.receive_buffers_posted.set(0);
}

void IbvTransport::stop_device() noexcept {
  send_queues_.close();
  receive_queues_.close();
  if (pd_ != nullptr) ibv_dealloc_pd(pd_);
  pd_ = nullptr;
}

// ---- queue pairs ----------------------------------------------------------------------------------------

ibv_qp* IbvTransport::make_qp(rdma_cm_id* id, CompletionQueue* queue, std::uint32_t& max_inline, std::string& error) {
  const bool outgoing = queue != nullptr;
  ibv_qp_init_attr attributes{};
  attributes.qp_type = IBV_QPT_RC;
  attributes.sq_sig_all = 0;
  if (outgoing) {
    attributes.send_cq = queue->cq;
    attributes.recv_cq = queue->cq;
    attributes.cap.max_send_wr = static_cast<std::uint32_t>(send_depth());
    attributes.cap.max_recv_wr = kCreditBuffers;
    attributes.cap.max_send_sge = static_cast<std::uint32_t>(gather_limit());
    attributes.cap.max_inline_data = static_cast<std::uint32_t>(settings_.inline_threshold);
  } else {
    attributes.send_cq = receive_queues_.first().cq;
    attributes.recv_cq = receive_queues_.first().cq;
    attributes.srq = srq_;
    attributes.cap.max_send_wr = kCreditSends;
    attributes.cap.max_recv_wr = srq_ != nullptr ? 0 : static_cast<std::uint32_t>(receive_depth());
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
  const int result = ibv_modify_qp(qp, &attributes, mask);
  if (result != 0) {
    error = "ibv_modify_qp to state " + std::to_string(static_cast<int>(state)) + ": " + errno_text(result);
    return false;
  }
  return true;
}

// ---- send side ------------------------------------------------------------------------------------------

std::unique_ptr<pt::OutgoingConnection> IbvTransport::make_outgoing(const EndpointAddress& remote) {
  pt::SocketAddress address = pt::HostResolver::shared().resolve(remote.hostname, remote.port);
  if (context_ == nullptr) {
    // A context that only sends: its device is the one named, or the one its first peer is reached by.
    if (!settings_.device.empty()) {
      open_device(choose_device(nullptr));
    } else {
      rdma_cm_id* probe = nullptr;
      if (rdma_create_id(nullptr, &probe, nullptr, RDMA_PS_TCP) != 0)
        throw std::runtime_error("rdma_create_id: " + errno_text(errno));
      const int result =
          rdma_resolve_addr(probe, nullptr, address.get(), static_cast<int>(settings_.resolve_timeout.count()));
      ibv_context* device = result == 0 ? probe->verbs : nullptr;
      const int error = errno;
      rdma_destroy_id(probe);
      if (device == nullptr)
        throw std::runtime_error("no RDMA device reaches " + remote.text() + " (rdma_resolve_addr: " +
                                 (result == 0 ? std::string("no device") : errno_text(error)) +
                                 "); name one with the parameter device");
      open_device(device);
    }
  }
  auto c = std::make_unique<Outgoing>(connection_settings().send_queue);
  c->address = address;
  return c;
}

IbvTransport::Posted IbvTransport::post_message(pt::MessageOutgoing& c, pt::SendLink& base, const Message& message) noexcept {
  auto& link = static_cast<Link&>(base);
  const pt::MessagePieces& pieces = message.pieces;
  ibv_sge sge[pt::MessagePieces::kMaxPieces];
  for (std::size_t i = 0; i < pieces.count; ++i) {
    sge[i].addr = reinterpret_cast<std::uintptr_t>(pieces.iov[i].iov_base);
    sge[i].length = static_cast<std::uint32_t>(pieces.iov[i].iov_len);
    sge[i].lkey = pieces.local_keys[i];
  }
  ibv_send_wr wr{};
  wr.wr_id = work_id(link.serial, static_cast<std::uint32_t>(message.slot));
  wr.sg_list = sge;
  wr.num_sge = static_cast<int>(pieces.count);
  wr.opcode = IBV_WR_SEND_WITH_IMM;
  wr.imm_data = htonl(link.credit_buffers_posted);
  const bool inlined = pieces.bytes <= link.max_inline && pieces.bytes <= settings_.inline_threshold;
  // Completions are asked for sparingly (each wakes the send thread): on an RC queue pair one completion
  // says every earlier message is done too. One is needed every quarter of the ring, so that slots come
  // back; when the ring is about to be full; and when nothing more is queued, so that the frames of the
  // messages in flight go back to their pools without waiting for more traffic.
  const std::size_t ring = link.ring.size();
  const bool signal = link.unsignaled + 1 >= std::max<std::size_t>(1, ring / 4) || link.ring.in_flight() + 1 >= ring ||
                      message.last_queued;
  wr.send_flags = signal ? IBV_SEND_SIGNALED : 0;
  if (inlined) wr.send_flags |= IBV_SEND_INLINE;
  ibv_send_wr* bad = nullptr;
  const int result = ibv_post_send(link.qp, &wr, &bad);
  if (result != 0) {
    c.failure = "ibv_post_send: " + errno_text(result);
    return Posted::failed;
  }
  link.unsignaled = signal ? 0 : link.unsignaled + 1;
  if (inlined) ibv_counters_.inline_messages.add();
  return Posted::ok;
}

bool IbvTransport::post_credit_receive(Link& link, std::size_t index, std::string& error) {
  mem::Ref& buffer = link.credit_buffers[index];
  if (!buffer) buffer = credit_pool_->allocate(kCreditBufferSize);
  if (!buffer) {
    error = "no buffer for credit messages (pool pt/ibv/credit is empty)";
    return false;
  }
  ibv_sge sge{};
  sge.addr = reinterpret_cast<std::uintptr_t>(buffer.data());
  sge.length = static_cast<std::uint32_t>(buffer.size());
  sge.lkey = static_cast<std::uint32_t>(buffer.head()->key(registration_slot()).key);
  ibv_recv_wr wr{};
  wr.wr_id = work_id(link.serial, kCreditTag | static_cast<std::uint32_t>(index));
  wr.sg_list = &sge;
  wr.num_sge = 1;
  ibv_recv_wr* bad = nullptr;
  const int result = ibv_post_recv(link.qp, &wr, &bad);
  if (result != 0) {
    error = "ibv_post_recv: " + errno_text(result);
    return false;
  }
  ++link.credit_buffers_posted;
  return true;
}

void IbvTransport::start_connect(pt::OutgoingConnection& base) {
  auto& c = static_cast<Outgoing&>(base);
  const std::size_t need = send_depth() + kCreditBuffers;
  auto link = std::make_unique<Link>();
  link->owner = &c;
  link->serial = next_link_serial_++;
  if (next_link_serial_ == 0) next_link_serial_ = 1;
  link->ring.resize(send_depth());
  link->credit_buffers.resize(kCreditBuffers);
  std::string error;
  link->queue = send_queues_.reserve(need, error);
  if (link->queue == nullptr) {
    // error says why: the device gives no more completion queues
  } else if (rdma_create_id(send_events_, &link->id, reinterpret_cast<void*>(static_cast<std::uintptr_t>(link->serial)),
                            RDMA_PS_TCP) != 0) {
    error = "rdma_create_id: " + errno_text(errno);
  } else if (rdma_resolve_addr(link->id, nullptr, c.address.get(), static_cast<int>(settings_.resolve_timeout.count())) !=
             0) {
    error = "rdma_resolve_addr: " + errno_text(errno);
  }
  c.link = link.get();
  links_.emplace(link->serial, std::move(link));
  if (!error.empty()) teardown(c, error);
}

std::size_t IbvTransport::close_link(pt::OutgoingConnection& base) noexcept {
  auto& c = static_cast<Outgoing&>(base);
  auto* link = static_cast<Link*>(c.link);
  if (link == nullptr) return 0;
  // The QP goes first: after ibv_destroy_qp the device reads none of the blocks released below.
  if (link->id != nullptr && link->connected) rdma_disconnect(link->id);
  if (link->qp != nullptr) ibv_destroy_qp(link->qp);
  if (link->id != nullptr) rdma_destroy_id(link->id);
  link->qp = nullptr;
  link->id = nullptr;
  release_link(c, *link);
  if (link->queue != nullptr) send_queues_.release(*link->queue, send_depth() + kCreditBuffers);
  link->queue = nullptr;
  links_.erase(link->serial);  // its credit buffers go back to their pool here
  return 0;  // the frames it carried are in the queue: teardown counts them
}

void IbvTransport::on_send_completion(const ibv_wc& wc) {
  auto found = links_.find(work_serial(wc.wr_id));
  if (found == links_.end()) return;  // a completion of a connection torn down: its blocks went back then
  Link& link = *found->second;
  Outgoing& c = *link.owner;
  const std::uint32_t index = work_index(wc.wr_id);
  with_lock(c, [&] {
    if (c.link != &link) return;
    if (wc.status != IBV_WC_SUCCESS) {
      if (wc.status == IBV_WC_WR_FLUSH_ERR) {
        teardown(c, "the queue pair was flushed (connection closed)");
        return;
      }
      events().completion_errors.add();
      ibv_counters_.qp_errors.add();
      teardown(c, std::string((index & kCreditTag) != 0 ? "credit receive" : "send") + " failed: " +
                      ibv_wc_status_str(wc.status) + " (vendor error " + std::to_string(wc.vendor_err) + ")");
      return;
    }
    if ((index & kCreditTag) == 0) {
      // This message and every one posted before it are done (RC completes in order).
      messages_sent_through(c, link, index);
      return;
    }
    const std::size_t buffer_index = index & ~kCreditTag;
    pt::CreditMessage message;
    mem::Ref& buffer = link.credit_buffers[buffer_index];
    std::string error;
    if (!buffer || !pt::decode_credit(buffer.data(), wc.byte_len, message)) {
      teardown(c, "a malformed credit message from the receiver");
    } else if (!post_credit_receive(link, buffer_index, error)) {
      teardown(c, error);
    } else {
      // Re-posted before the credits are used: every data message they pay for tells the receiver.
      credits_granted(c, link, message);
    }
  });
}

void IbvTransport::on_send_event(rdma_cm_event& event) {
  auto found = links_.find(static_cast<std::uint32_t>(reinterpret_cast<std::uintptr_t>(event.id->context)));
  if (found == links_.end()) return;
  Link& link = *found->second;
  Outgoing& c = *link.owner;
  with_lock(c, [&] {
    if (c.link != &link) return;
    std::string error;
    switch (event.event) {
      case RDMA_CM_EVENT_ADDR_RESOLVED:
        if (link.id->verbs != context_)
          error = "the route to " + c.remote.text() + " goes through device " + device_name(link.id->verbs) +
                  ", ptibv uses " + device_name(context_);
        else if (settings_.port != 0 && link.id->port_num != settings_.port)
          error = c.remote.text() + " is reached through port " + std::to_string(link.id->port_num) + " of " +
                  device_name(context_) + ", not port " + std::to_string(settings_.port);
        else if (rdma_resolve_route(link.id, static_cast<int>(settings_.resolve_timeout.count())) != 0)
          error = "rdma_resolve_route: " + errno_text(errno);
        break;
      case RDMA_CM_EVENT_ROUTE_RESOLVED: {
        link.qp = make_qp(link.id, link.queue, link.max_inline, error);
        if (link.qp == nullptr) break;
        // Somewhere for the receiver's credit messages to land before the connection is even up.
        for (std::size_t i = 0; i < link.credit_buffers.size() && error.empty(); ++i) post_credit_receive(link, i, error);
        if (!error.empty()) break;
        std::byte request[kConnectRequestSize];
        encode_request({link.credit_buffers_posted}, request);
        rdma_conn_param param{};
        param.private_data = request;
        param.private_data_len = static_cast<std::uint8_t>(sizeof request);
        param.retry_count = 7;
        param.rnr_retry_count = 0;
        param.qp_num = link.qp->qp_num;
        if (rdma_connect(link.id, &param) != 0) error = "rdma_connect: " + errno_text(errno);
        break;
      }
      case RDMA_CM_EVENT_CONNECT_RESPONSE: {
        ConnectReply reply;
        error = decode_reply(event.param.conn.private_data, event.param.conn.private_data_len, reply);
        if (!error.empty()) {
          error = "the peer's reply: " + error;
          rdma_reject(link.id, nullptr, 0);
          break;
        }
        if (!move_qp(link.id, link.qp, IBV_QPS_RTR, error) || !move_qp(link.id, link.qp, IBV_QPS_RTS, error)) {
          rdma_reject(link.id, nullptr, 0);
          break;
        }
        if (rdma_establish(link.id) != 0) {
          error = "rdma_establish: " + errno_text(errno);
          break;
        }
        link.credits.grant({reply.buffer_size, reply.posted_total});
        link.connected = true;
        connection_up(c);
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
    if (!error.empty()) teardown(c, error);
  });
}

bool IbvTransport::reap_send() {
  return reap(send_queues_, send_events_, [this](const ibv_wc& wc) { on_send_completion(wc); },
              [this](rdma_cm_event& event) { on_send_event(event); });
}

// ---- receive side ---------------------------------------------------------------------------------------

void IbvTransport::accept(rdma_cm_id* id, const rdma_conn_param& param) {
  const std::string remote = address_text(rdma_get_peer_addr(id));
  auto refuse = [&](const std::string& reason) {
    rdma_reject(id, nullptr, 0);
    rdma_destroy_id(id);
    events().connection_requests_refused.add();
    host().log(LogLevel::warning, "refused a connection request from " + remote + ": " + reason);
  };
  // Before a queue pair is made or a receive buffer posted for it.
  if (over_incoming_limit(remote)) {
    rdma_reject(id, nullptr, 0);
    rdma_destroy_id(id);
    return;
  }
  ConnectRequest request;
  std::string error = decode_request(param.private_data, param.private_data_len, request);
  if (!error.empty()) return refuse(error);
  if (id->verbs != context_) return refuse("it arrived on device " + device_name(id->verbs));
  if (receive_cq_use_ + 1 + kCreditSends > receive_queues_.entries())
    return refuse("the receive completion queue is full (" + std::to_string(receive_queues_.entries()) + " entries)");

  auto connection = std::make_unique<Incoming>(std::max<std::size_t>(1, connection_depth() / 4),
                                               connection_settings().max_frame_size);
  Incoming* c = connection.get();
  prepare_incoming(*c);
  c->remote = remote;
  c->serial = next_incoming_serial_++;
  c->cm_id = id;
  c->allowance.start(request.credit_buffers);
  std::uint32_t max_inline = 0;
  c->qp = make_qp(id, nullptr, max_inline, error);
  if (c->qp == nullptr) return refuse(error);
  id->context = reinterpret_cast<void*>(static_cast<std::uintptr_t>(c->serial));
  adopt(std::move(connection));
  incoming_by_qp_[c->qp->qp_num] = c;
  incoming_by_serial_[c->serial] = c;
  receive_cq_use_ += 1 + kCreditSends;
  // Buffers go up before the connection does: the sender may start as soon as it has the reply.
  replenish(*c);
  if (c->closed) return;
  if (!move_qp(id, c->qp, IBV_QPS_RTR, error) || !move_qp(id, c->qp, IBV_QPS_RTS, error)) {
    rdma_reject(id, nullptr, 0);
    events().connection_requests_refused.add();
    close_incoming(*c, error, pt::Ending::normal);
    return;
  }
  std::byte reply[kConnectReplySize];
  encode_reply({static_cast<std::uint32_t>(message_settings().receive_buffer_size), c->credits.report()}, reply);
  rdma_conn_param answer{};
  answer.private_data = reply;
  answer.private_data_len = static_cast<std::uint8_t>(sizeof reply);
  answer.retry_count = 7;
  answer.rnr_retry_count = 0;
  answer.qp_num = c->qp->qp_num;
  answer.srq = srq_ != nullptr ? 1 : 0;
  if (rdma_accept(id, &answer) != 0) {
    events().connection_requests_refused.add();
    close_incoming(*c, "rdma_accept: " + errno_text(errno), pt::Ending::normal);
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
  sge.lkey = static_cast<std::uint32_t>(buffer.head()->key(registration_slot()).key);
  ibv_recv_wr wr{};
  wr.wr_id = work_id(slot.generation, index);
  wr.sg_list = &sge;
  wr.num_sge = 1;
  ibv_recv_wr* bad = nullptr;
  const int result =
      owner != nullptr && srq_ == nullptr ? ibv_post_recv(owner->qp, &wr, &bad) : ibv_post_srq_recv(srq_, &wr, &bad);
  if (result != 0) {
    free_slots_.push_back(index);
    error = (srq_ != nullptr ? "ibv_post_srq_recv: " : "ibv_post_recv: ") + errno_text(result);
    return false;
  }
  slot.buffer = std::move(buffer);
  slot.owner = srq_ != nullptr ? nullptr : owner;
  ibv_counters_.receive_buffers_posted.add();
  if (srq_ != nullptr) ++srq_posted_;
  return true;
}

IbvTransport::Post IbvTransport::post_receive_buffer(pt::MessageIncoming& base, std::string& error) {
  auto& c = static_cast<Incoming&>(base);
  if (srq_ != nullptr && srq_spare_ > 0) {
    --srq_spare_;  // a buffer left in the shared queue by a closed connection: it is this one's now
    return Post::posted;
  }
  if (srq_ != nullptr && srq_posted_ >= srq_capacity_) return Post::no_room;  // a message arriving frees room
  mem::Ref buffer = receive_pool_->allocate(message_settings().receive_buffer_size);
  if (!buffer) return Post::no_memory;
  return post_receive(&c, std::move(buffer), error) ? Post::posted : Post::failed;
}

IbvTransport::Post IbvTransport::post_credits(pt::MessageIncoming& base, const pt::CreditMessage& message, std::string& error) {
  auto& c = static_cast<Incoming&>(base);
  // Only as many credit messages in flight as the QP takes, and only into buffers the sender has posted.
  if (c.credit_sends >= kCreditSends || c.allowance.available() == 0) return Post::no_room;
  std::byte bytes[pt::kCreditMessageSize];
  pt::encode_credit(message, bytes);
  ibv_sge sge{};
  sge.addr = reinterpret_cast<std::uintptr_t>(bytes);
  sge.length = static_cast<std::uint32_t>(sizeof bytes);
  ibv_send_wr wr{};
  wr.wr_id = work_id(c.serial, kCreditTag);
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = IBV_WR_SEND;
  wr.send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE;  // inline: the message lives on this stack
  ibv_send_wr* bad = nullptr;
  const int result = ibv_post_send(c.qp, &wr, &bad);
  if (result != 0) {
    error = "ibv_post_send: " + errno_text(result);
    return Post::failed;
  }
  ++c.credit_sends;
  c.allowance.sent();
  ibv_counters_.credit_messages.add();
  return Post::posted;
}

void IbvTransport::close_receive_link(pt::MessageIncoming& base) noexcept {
  auto& c = static_cast<Incoming&>(base);
  if (c.qp != nullptr) {
    incoming_by_qp_.erase(c.qp->qp_num);
    if (c.cm_id != nullptr) rdma_disconnect(c.cm_id);
    ibv_destroy_qp(c.qp);  // after this the device writes into none of this connection's buffers
    receive_cq_use_ -= std::min(receive_cq_use_, std::size_t{1} + kCreditSends);
  }
  c.qp = nullptr;
  if (c.cm_id != nullptr) rdma_destroy_id(c.cm_id);
  c.cm_id = nullptr;
  incoming_by_serial_.erase(c.serial);
  // Its buffers: those in its own receive queue go back to the pool; those in the shared queue stay posted
  // there for the next connection.
  if (srq_ != nullptr) {
    const std::uint64_t arrived = c.consumed() + c.assembler.messages_waiting();
    srq_spare_ += c.posted > arrived ? c.posted - arrived : 0;
  }
  for (std::uint32_t i = 0; i < slots_.size(); ++i) {
    ReceiveSlot& slot = slots_[i];
    if (slot.owner != &c) continue;
    slot.buffer.reset();
    ibv_counters_.receive_buffers_posted.sub();
    slot.owner = nullptr;
    ++slot.generation;
    free_slots_.push_back(i);
  }
}

void IbvTransport::on_receive_completion(const ibv_wc& wc) {
  const std::uint32_t index = work_index(wc.wr_id);
  if (index == kCreditTag) {  // a credit message we sent
    auto found = incoming_by_qp_.find(wc.qp_num);
    if (found == incoming_by_qp_.end()) return;
    Incoming& c = *found->second;
    if (c.credit_sends > 0) --c.credit_sends;
    if (wc.status != IBV_WC_SUCCESS) {
      if (wc.status != IBV_WC_WR_FLUSH_ERR) {
        events().completion_errors.add();
        ibv_counters_.qp_errors.add();
      }
      close_incoming(c, std::string("credit send failed: ") + ibv_wc_status_str(wc.status), ending_of(c));
      return;
    }
    send_credits(c);
    return;
  }
  if (index >= slots_.size() || slots_[index].generation != work_serial(wc.wr_id)) return;  // of a closed QP
  ReceiveSlot& slot = slots_[index];
  mem::Ref buffer = std::move(slot.buffer);
  ibv_counters_.receive_buffers_posted.sub();
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
    if (wc.status == IBV_WC_WR_FLUSH_ERR) {
      close_incoming(c, "closed by the peer", ending_of(c));
    } else {
      events().completion_errors.add();
      ibv_counters_.qp_errors.add();
      close_incoming(c, std::string("receive failed: ") + ibv_wc_status_str(wc.status), ending_of(c));
    }
    return;
  }
  if ((wc.wc_flags & IBV_WC_WITH_IMM) == 0 || wc.opcode != IBV_WC_RECV) {
    close_incoming(c, "bad frame: a message without the sender's credit count (not a ptibv sender?)", pt::Ending::bad);
    return;
  }
  c.allowance.update(ntohl(wc.imm_data));
  if (c.consumed() + c.assembler.messages_waiting() >= c.posted) {
    close_incoming(c, "bad stream: the sender sent more messages than it had credits for", pt::Ending::bad);
    return;
  }
  message_arrived(c, std::move(buffer), wc.byte_len);
}

void IbvTransport::on_receive_event(rdma_cm_event& event) {
  if (event.event == RDMA_CM_EVENT_CONNECT_REQUEST) {
    accept(event.id, event.param.conn);
    return;
  }
  if (event.id == listener_) {
    if (event.event == RDMA_CM_EVENT_DEVICE_REMOVAL) host().log(LogLevel::error, "device removed under the listener");
    return;
  }
  auto found = incoming_by_serial_.find(static_cast<std::uint32_t>(reinterpret_cast<std::uintptr_t>(event.id->context)));
  if (found == incoming_by_serial_.end()) return;
  Incoming& c = *found->second;
  switch (event.event) {
    case RDMA_CM_EVENT_ESTABLISHED:
      incoming_up(c);
      send_credits(c);
      break;
    case RDMA_CM_EVENT_DISCONNECTED: {
      // Messages that arrived before the peer went may still be in the completion queue: take them first.
      while (receive_queues_.poll(kReadRounds, [this](const ibv_wc& wc) { on_receive_completion(wc); })) {
      }
      if (!c.closed) close_incoming(c, "closed by the peer", ending_of(c));
      break;
    }
    case RDMA_CM_EVENT_TIMEWAIT_EXIT:
      break;
    default:  // CONNECT_ERROR, UNREACHABLE, DEVICE_REMOVAL, ...
      close_incoming(c, event_text(event), c.assembler.mid_frame() ? pt::Ending::truncated : pt::Ending::normal);
      break;
  }
}

void IbvTransport::on_async_events() {
  ibv_async_event event{};
  while (ibv_get_async_event(context_, &event) == 0) {
    ibv_counters_.async_events.add();
    host().log(LogLevel::warning, std::string("device event: ") + ibv_event_type_str(event.event_type));
    ibv_ack_async_event(&event);
  }
}

bool IbvTransport::reap_receive() {
  return reap(receive_queues_, receive_events_, [this](const ibv_wc& wc) { on_receive_completion(wc); },
              [this](rdma_cm_event& event) { on_receive_event(event); });
}

void IbvTransport::receive_housekeeping(Clock::time_point now) {
  if (async_ready_ || now >= next_async_check_) {
    async_ready_ = false;
    next_async_check_ = now + kAsyncCheckInterval;
    if (context_ != nullptr) on_async_events();
  }
  // Closed connections are found by no completion or event any more (their maps forgot them): they can go.
  forget_closed_incoming();
}

// ---- reports --------------------------------------------------------------------------------------------

void IbvTransport::report_wire(MetricSink& sink) const {
  MessageTransport::report_wire(sink);
  auto d = [](std::uint64_t v) { return static_cast<double>(v); };
  ibv_counters_.report(sink);
  sink.setting("shared_receive_queue", srq_ != nullptr ? 1 : 0, "1 when receive buffers go to a shared receive queue");
  sink.gauge("send_completion_queues", d(send_queues_.count()),
             "send completion queues open (one more whenever the others have no room for another connection)");
  sink.setting("numa_node", numa_node_, "NUMA node of ptibv's pools (-1: as the policy says)");
}

}  // namespace daqx::ptibv
