// ptofi implementation: the fabric, endpoints per connection, and posting messages, receive buffers and
// credit messages with libfabric. Connection handling, credits, assembly and delivery are pt/base's.
#include "ofi_transport.hpp"

#include <rdma/fi_errno.h>
#include <sys/epoll.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace daqx::ptofi {
namespace {

using State = pt::OutgoingConnection::State;
constexpr std::size_t kCompletionQueueSize = 8192;
constexpr std::size_t kEventQueueSize = 256;
constexpr int kReadRounds = 8;  // batches per round before the thread looks at events and timers
using pt::kCreditBufferSize;

// A connection-management event with room for connection data we do not use (the entry ends in a
// flexible array, so it cannot be a member followed by others).
union CmEvent {
  fi_eq_cm_entry entry;
  std::uint8_t space[sizeof(fi_eq_cm_entry) + 256];
};

// A connection id as accept data: 8 bytes, least significant first.
void encode_id(std::uint64_t id, std::uint8_t (&bytes)[8]) {
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<std::uint8_t>(id >> (8 * i));
}
std::uint64_t decode_id(const std::uint8_t* bytes) {
  std::uint64_t id = 0;
  for (int i = 0; i < 8; ++i) id |= static_cast<std::uint64_t>(bytes[i]) << (8 * i);
  return id;
}

// One round of a completion thread: up to kReadRounds batches of completions, then every connection
// event (with the length of its connection data). Returns whether there was anything, so the thread sleeps
// only when there was not.
template <typename Completion, typename CompletionError, typename Event, typename EventError>
bool drain_queues(CompletionQueues& queues, fid_eq* eq, Completion&& completion, CompletionError&& completion_error,
                  Event&& event, EventError&& event_error) {
  bool worked = queues.poll(kReadRounds, completion, completion_error);
  for (;;) {
    CmEvent entry{};
    std::uint32_t kind = 0;
    ssize_t got = fi_eq_read(eq, &kind, &entry.entry, sizeof entry, 0);
    if (got > 0) {
      const auto length = static_cast<std::size_t>(got);
      event(kind, entry.entry, length > sizeof(fi_eq_cm_entry) ? length - sizeof(fi_eq_cm_entry) : 0);
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

// libfabric's text for an error entry, with the provider's own detail when it has one.
template <typename Queue, typename Entry, typename ProviderText>
std::string error_text(Queue* queue, const Entry& error, ProviderText provider_text) {
  char buffer[256] = "";
  std::string text = fabric_error(error.err);
  if (error.prov_errno == 0) return text;
  const char* detail = provider_text(queue, error.prov_errno, error.err_data, buffer, sizeof buffer);
  if (detail != nullptr && detail[0] != '\0') text.append(" (").append(detail).append(")");
  return text;
}

std::string completion_error_text(fid_cq* cq, const fi_cq_err_entry& error) {
  return error_text(cq, error, [](fid_cq* q, int e, const void* d, char* b, std::size_t n) { return fi_cq_strerror(q, e, d, b, n); });
}

std::string event_error_text(fid_eq* eq, const fi_eq_err_entry& error) {
  return error_text(eq, error, [](fid_eq* q, int e, const void* d, char* b, std::size_t n) { return fi_eq_strerror(q, e, d, b, n); });
}

void* descriptor_of(const mem::Ref& buffer, std::size_t slot) {
  return slot == pt::kNoRegistration ? nullptr : buffer.head()->key(slot).descriptor;
}

}  // namespace

// ---- life cycle -----------------------------------------------------------------------------------------

OfiTransport::OfiTransport(TransportHost& host)
    : MessageTransport(host, &ptofi::describe), settings_(Settings::from(host.params())) {
  // Fail at configure time, naming what the provider lacks, rather than at the first connection.
  find_provider(settings_.provider, nullptr, nullptr, 0);
  const pt::MessageSettings& m = message_settings();
  mem::PoolConfig receive = pt::receive_pool_config(m);
  receive.views = views_needed();
  receive_pool_ = &this->host().make_pool("recv", receive);
  mem::PoolConfig credit = pt::credit_pool_config();
  credit_pool_ = &this->host().make_pool("credit", credit);
  receive_pool_->on_available([this] { request_resume(); });
}

void OfiTransport::refine_capabilities(TransportCapabilities& c) const {
  if (!fabric_) return;
  // What it actually does, now that the provider is open.
  c.memory_registration = registration_slot() != pt::kNoRegistration;
  c.gather_limit = gather_limit();
}

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
  const fi_wait_obj wait_object = busy_polling() ? FI_WAIT_NONE : FI_WAIT_FD;
  const std::string wait_hint = busy_polling() ? "" : " (waitMode=epoll needs FI_WAIT_FD wait objects; waitMode=busy does not)";
  for (auto* eq : {&send_eq_, &receive_eq_}) {
    fi_eq_attr attributes{};
    attributes.size = kEventQueueSize;
    attributes.wait_obj = wait_object;
    fid_eq* opened = nullptr;
    check(fi_eq_open(fabric_.get(), &attributes, &opened, nullptr),
          "libfabric provider '" + settings_.provider + "' cannot open an event queue" + wait_hint);
    eq->reset(opened);
  }
  fi_cq_attr cq_attributes{};
  cq_attributes.size = kCompletionQueueSize;
  cq_attributes.format = FI_CQ_FORMAT_DATA;  // a shared receive's remote CQ data names its connection
  cq_attributes.wait_obj = wait_object;
  const std::string cq_failed = "libfabric provider '" + settings_.provider + "' cannot open a completion queue" + wait_hint;
  // Each queue's thread waits on its descriptor too, from the moment it is opened.
  auto waited_by = [this](pt::Waiter& waiter) {
    return [this, &waiter](fid_cq* cq) {
      if (!busy_polling()) add_wait_object(waiter, &cq->fid);
    };
  };
  send_queues_.open(domain_.get(), cq_attributes, waited_by(send_waiter()), cq_failed);
  receive_queues_.open(domain_.get(), cq_attributes, waited_by(receive_waiter()), cq_failed);
  send_queues_.add_wait_object(&send_eq_->fid);
  receive_queues_.add_wait_object(&receive_eq_->fid);

  const pt::MessageSettings& m = message_settings();
  set_limits(info.tx_attr->iov_limit, std::min(m.send_depth, info.tx_attr->size),
             std::min(m.receive_depth, info.rx_attr->size));
  if (m.receive_buffer_size > info.ep_attr->max_msg_size)
    throw std::runtime_error("recvBufferSize " + std::to_string(m.receive_buffer_size) + " B exceeds provider '" +
                             settings_.provider + "''s largest message (" + std::to_string(info.ep_attr->max_msg_size) +
                             " B)");

  const bool register_pools = settings_.registration == Settings::Registration::always ||
                              (settings_.registration == Settings::Registration::automatic && needs_local_registration(info));
  if (register_pools) register_memory(make_registrar(domain_.get()));
  host().log(LogLevel::info, "provider " + std::string(info.fabric_attr->prov_name) + ", fabric " +
                                 std::string(info.fabric_attr->name != nullptr ? info.fabric_attr->name : "?") + ", domain " +
                                 std::string(info.domain_attr->name != nullptr ? info.domain_attr->name : "?") +
                                 ", memory registration " + (register_pools ? "on" : "off") + ", " +
                                 std::to_string(gather_limit()) + " pieces per message, " + std::to_string(send_depth()) +
                                 " messages in flight, " + std::to_string(receive_budget()) +
                                 " receive buffers shared by the incoming connections (" +
                                 std::to_string(connection_depth()) + " each, at most " +
                                 std::to_string(receive_depth()) + "), completion queues of " +
                                 std::to_string(kCompletionQueueSize) + " entries (" +
                                 std::to_string(kCompletionQueueSize / (send_depth() + kCreditBuffers)) +
                                 " outgoing connections each)");

  if (!busy_polling()) {
    add_wait_object(send_waiter(), &send_eq_->fid);
    add_wait_object(receive_waiter(), &receive_eq_->fid);
  }
  start_threads();
}

void OfiTransport::add_wait_object(pt::Waiter& waiter, fid* object) {
  int fd = -1;
  int error = fi_control(object, FI_GETWAIT, &fd);
  if (error != 0 || fd < 0)
    throw std::runtime_error("libfabric provider '" + settings_.provider +
                             "' gives no file descriptor to wait on (FI_GETWAIT: " + fabric_error(error) +
                             "): set waitMode=busy");
  waiter.add(fd, &wait_marker_);
}

OfiTransport::SleepCheck OfiTransport::ready_to_sleep(const CompletionQueues& queues) {
  const std::vector<fid*>& objects = queues.wait_objects();
  // fi_trywait: the provider may have work it can only find by being polled; sleeping is safe only when
  // it says so.
  const int ready = fi_trywait(fabric_.get(), const_cast<fid**>(objects.data()), static_cast<int>(objects.size()));
  if (ready == -FI_EAGAIN) return SleepCheck::look_again;
  return ready == 0 ? SleepCheck::sleep : SleepCheck::sleep_briefly;
}

OfiTransport::SleepCheck OfiTransport::ready_to_sleep_send() { return ready_to_sleep(send_queues_); }

OfiTransport::SleepCheck OfiTransport::ready_to_sleep_receive() { return ready_to_sleep(receive_queues_); }

void OfiTransport::listen(const EndpointAddress& local) {
  local_ = local;
  const std::string service = std::to_string(local.port);
  InfoPtr info = find_provider(settings_.provider, local.hostname.c_str(), service.c_str(), FI_SOURCE);
  open_fabric(*info);
  open_shared_receive(*info);
  fid_pep* passive = nullptr;
  int error = fi_passive_ep(fabric_.get(), info.get(), &passive, &passive_marker_);
  if (error != 0) throw std::runtime_error("fi_passive_ep on " + local.text() + ": " + fabric_error(error));
  passive_.reset(passive);
  error = fi_pep_bind(passive_.get(), &receive_eq_->fid, 0);
  if (error != 0) throw std::runtime_error("fi_pep_bind: " + fabric_error(error));
  error = fi_listen(passive_.get());
  if (error != 0) throw std::runtime_error("fi_listen on " + local.text() + ": " + fabric_error(error));
  receive_waiter().wake();
}

void OfiTransport::open_shared_receive(const fi_info& info) {
  if (settings_.srx == Settings::Srx::never || srx_) return;
  if (info.domain_attr->max_ep_srx_ctx == 0 || info.domain_attr->cq_data_size < sizeof(std::uint64_t)) {
    host().log(LogLevel::info, "provider " + settings_.provider + " has no shared receive contexts or less than 8 bytes "
                               "of remote CQ data: receive buffers are posted to each incoming connection");
    return;
  }
  // Room for the budget and for every connection's one buffer beyond it (pt/base keeps each connection one).
  fi_rx_attr attributes = *info.rx_attr;
  attributes.size = std::max<std::size_t>(attributes.size, 2 * receive_budget());
  fid_ep* srx = nullptr;
  const int error = fi_srx_context(domain_.get(), &attributes, &srx, nullptr);
  if (error != 0) {
    host().log(LogLevel::warning, "fi_srx_context: " + fabric_error(error) +
                                      ": receive buffers are posted to each incoming connection");
    return;
  }
  srx_.reset(srx);
  srx_slots_.resize(attributes.size);
  srx_free_.reserve(attributes.size);
  for (std::size_t i = srx_slots_.size(); i-- > 0;) {
    srx_slots_[i].context.kind = OpKind::shared_receive;
    srx_slots_[i].context.index = static_cast<std::uint32_t>(i);
    srx_free_.push_back(static_cast<std::uint32_t>(i));
  }
  srx_capacity_.store(attributes.size, std::memory_order_relaxed);
  cap_receive_budget(attributes.size / 2);
  host().log(LogLevel::info, "incoming connections share one receive context of " + std::to_string(attributes.size) +
                                 " buffers (" + std::to_string(receive_budget()) + " budgeted)");
}

void OfiTransport::stop_endpoints() noexcept {
  passive_.reset();
  srx_.reset();  // after the incoming endpoints (closed before): the provider lets go of every shared buffer
  srx_slots_.clear();
  srx_free_.clear();
  srx_posted_.store(0, std::memory_order_relaxed);
  for (auto& link : links_) link->credit_buffers.clear();
}

void OfiTransport::stop_device() noexcept {
  send_queues_.close();
  receive_queues_.close();
  send_eq_.reset();
  receive_eq_.reset();
  domain_.reset();
  fabric_.reset();
}

fid_ep* OfiTransport::make_endpoint(fi_info* info, void* context, fid_eq* eq, fid_cq* cq, fid_ep* srx,
                                    std::string& error) {
  if (srx != nullptr) info->ep_attr->rx_ctx_cnt = FI_SHARED_CONTEXT;
  fid_ep* endpoint = nullptr;
  int result = fi_endpoint(domain_.get(), info, &endpoint, context);
  if (result != 0) {
    error = "fi_endpoint: " + fabric_error(result);
    return nullptr;
  }
  result = srx != nullptr ? fi_ep_bind(endpoint, &srx->fid, 0) : 0;
  if (result == 0) result = fi_ep_bind(endpoint, &eq->fid, 0);
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

std::unique_ptr<pt::OutgoingConnection> OfiTransport::make_outgoing(const EndpointAddress& remote) {
  const std::string service = std::to_string(remote.port);
  InfoPtr info = find_provider(settings_.provider, remote.hostname.c_str(), service.c_str(), 0);
  open_fabric(*info);  // when nothing listens here (a context that only sends)
  auto c = std::make_unique<OfiOutgoing>(connection_settings().send_queue);
  c->info = std::move(info);
  return c;
}

OfiTransport::Posted OfiTransport::post_message(pt::MessageOutgoing& c, pt::SendLink& base, const Message& message) noexcept {
  auto& link = static_cast<OfiLink&>(base);
  const pt::MessagePieces& pieces = message.pieces;
  OpContext& op = link.sends[message.slot];
  ssize_t result = 0;
  if (link.send_id) {
    // The receiver shares a receive context: the connection's id tells it whose buffer this message took.
    fi_msg msg{};
    msg.msg_iov = pieces.iov;
    msg.desc = const_cast<void**>(pieces.descriptors);
    msg.iov_count = pieces.count;
    msg.context = &op.provider;
    msg.data = link.id;
    result = fi_sendmsg(link.endpoint, &msg, FI_REMOTE_CQ_DATA | FI_COMPLETION);
  } else {
    result = fi_sendv(link.endpoint, pieces.iov, const_cast<void**>(pieces.descriptors), pieces.count, 0, &op.provider);
  }
  if (result == 0) return Posted::ok;
  // -FI_EAGAIN: the provider's queue is full. Messages are in flight (their completions pump again) unless
  // the provider needs to be polled first: the send thread does that and retries.
  if (result == -FI_EAGAIN) return Posted::again;
  c.failure = "fi_sendv: " + fabric_error(static_cast<int>(result));
  return Posted::failed;
}

bool OfiTransport::post_credit_receive(OfiLink& link, BufferOp& op, std::string& error) {
  if (!op.buffer) op.buffer = credit_pool_->allocate(kCreditBufferSize);
  if (!op.buffer) {
    error = "no buffer for credit messages (pool pt/ofi/credit is empty)";
    return false;
  }
  const ssize_t result = fi_recv(link.endpoint, op.buffer.data(), op.buffer.size(),
                                 descriptor_of(op.buffer, registration_slot()), 0, &op.context.provider);
  if (result != 0) error = "fi_recv: " + fabric_error(static_cast<int>(result));
  return result == 0;
}

void OfiTransport::start_connect(pt::OutgoingConnection& base) {
  auto& c = static_cast<OfiOutgoing&>(base);
  auto link = std::make_unique<OfiLink>();
  link->owner = &c;
  link->ring.resize(send_depth());
  link->sends.resize(send_depth());
  for (std::size_t i = 0; i < link->sends.size(); ++i) {
    link->sends[i].kind = OpKind::data_send;
    link->sends[i].index = static_cast<std::uint32_t>(i);
    link->sends[i].link = link.get();
  }
  link->credit_buffers.resize(kCreditBuffers);
  for (std::size_t i = 0; i < link->credit_buffers.size(); ++i) {
    link->credit_buffers[i].context.kind = OpKind::credit_receive;
    link->credit_buffers[i].context.index = static_cast<std::uint32_t>(i);
    link->credit_buffers[i].context.link = link.get();
  }
  std::string error;
  link->queue = send_queues_.reserve(send_depth() + kCreditBuffers, error);
  if (link->queue != nullptr) {
    // Queues sized for what the endpoint does, not the provider's defaults: providers keep per-endpoint state
    // by these sizes, which a context with hundreds of endpoints pays for each.
    c.info->tx_attr->size = send_depth();
    c.info->rx_attr->size = kCreditBuffers;
    link->endpoint = make_endpoint(c.info.get(), link.get(), send_eq_.get(), link->queue->cq.get(), nullptr, error);
  }
  if (link->endpoint != nullptr) {
    // Somewhere for the receiver's first credit message to land before the connection is even up.
    for (BufferOp& op : link->credit_buffers)
      if (!post_credit_receive(*link, op, error)) break;
    if (error.empty()) {
      const int result = fi_connect(link->endpoint, c.info->dest_addr, nullptr, 0);
      if (result != 0) error = "fi_connect: " + fabric_error(result);
    }
  }
  c.link = link.get();
  links_.push_back(std::move(link));
  if (!error.empty()) teardown(c, error);
}

std::size_t OfiTransport::close_link(pt::OutgoingConnection& base) noexcept {
  auto& c = static_cast<OfiOutgoing&>(base);
  auto* link = static_cast<OfiLink*>(c.link);
  if (link == nullptr || link->closed) return 0;
  // Closing the endpoint stops the provider touching our buffers and drops its pending events.
  if (link->endpoint != nullptr) fi_close(&link->endpoint->fid);
  link->endpoint = nullptr;
  if (link->queue != nullptr) send_queues_.release(*link->queue, send_depth() + kCreditBuffers);
  link->queue = nullptr;
  for (BufferOp& op : link->credit_buffers) op.buffer.reset();
  release_link(c, *link);
  return 0;  // the frames it carried are in the queue: teardown counts them
}

void OfiTransport::on_send_completion(OpContext& op, std::size_t length) {
  auto& link = *static_cast<OfiLink*>(op.link);
  OfiOutgoing& c = *link.owner;
  with_lock(c, [&] {
    if (link.closed) return;  // a completion of an endpoint torn down: its blocks went back then
    if (op.kind == OpKind::data_send) {
      message_sent(c, link, op.index);
      return;
    }
    BufferOp& buffer = link.credit_buffers[op.index];
    pt::CreditMessage message;
    std::string error;
    if (!pt::decode_credit(buffer.buffer.data(), length, message)) {
      teardown(c, "a malformed credit message from the receiver");
    } else if (!post_credit_receive(link, buffer, error)) {
      teardown(c, error);
    } else {
      // Re-posted before the credits are used: there is always a buffer for the next credit message.
      credits_granted(c, link, message);
    }
  });
}

void OfiTransport::on_send_error(fid_cq* cq, const fi_cq_err_entry& error) {
  if (error.op_context == nullptr) return;
  auto& op = *static_cast<OpContext*>(error.op_context);
  auto& link = *static_cast<OfiLink*>(op.link);
  OfiOutgoing& c = *link.owner;
  with_lock(c, [&] {
    if (link.closed || c.link != &link) return;
    if (error.err == FI_ECANCELED) {  // the provider flushed what was posted: the connection is gone
      teardown(c, "closed by the peer");
      return;
    }
    events().completion_errors.add();
    teardown(c, (op.kind == OpKind::credit_receive ? "credit receive failed: " : "send failed: ") +
                    completion_error_text(cq, error));
  });
}

void OfiTransport::on_send_event(std::uint32_t event, const fi_eq_cm_entry& entry, std::size_t data_length) {
  const fid_t fid = entry.fid;
  if (fid == nullptr || fid->context == nullptr) return;
  auto& link = *static_cast<OfiLink*>(fid->context);
  OfiOutgoing& c = *link.owner;
  with_lock(c, [&] {
    if (link.closed || c.link != &link) return;
    if (event == FI_CONNECTED) {
      // Accept data of 8 bytes: the receiver shares a receive context and gave this connection that id.
      link.send_id = data_length >= sizeof link.id;
      if (link.send_id) link.id = decode_id(entry.data);
      link.connected = true;
      connection_up(c);  // credits may have arrived before the event: it pumps
    } else if (event == FI_SHUTDOWN) {
      teardown(c, "closed by the peer");
    }
  });
}

void OfiTransport::on_send_event_error(const fi_eq_err_entry& error) {
  void* context = error.context != nullptr ? error.context : (error.fid != nullptr ? error.fid->context : nullptr);
  if (context == nullptr) return;
  auto& link = *static_cast<OfiLink*>(context);
  OfiOutgoing& c = *link.owner;
  with_lock(c, [&] {
    if (link.closed || c.link != &link) return;
    teardown(c, "connect: " + event_error_text(send_eq_.get(), error));
  });
}

bool OfiTransport::reap_send() {
  return drain_queues(
      send_queues_, send_eq_.get(),
      [this](const fi_cq_data_entry& entry) { on_send_completion(*static_cast<OpContext*>(entry.op_context), entry.len); },
      [this](fid_cq* cq, const fi_cq_err_entry& error) { on_send_error(cq, error); },
      [this](std::uint32_t kind, const fi_eq_cm_entry& entry, std::size_t length) { on_send_event(kind, entry, length); },
      [this](const fi_eq_err_entry& error) { on_send_event_error(error); });
}

// ---- receive side ---------------------------------------------------------------------------------------

void OfiTransport::accept(fi_info* request) {
  // Before an endpoint is made or a receive buffer posted for it.
  if (over_incoming_limit(pt::address_text(static_cast<const sockaddr*>(request->dest_addr)))) {
    fi_reject(passive_.get(), request->handle, nullptr, 0);
    return;
  }
  auto connection = std::make_unique<OfiIncoming>(std::max<std::size_t>(1, connection_depth() / 4),
                                               connection_settings().max_frame_size);
  OfiIncoming* c = connection.get();
  prepare_incoming(*c);
  c->remote = pt::address_text(static_cast<const sockaddr*>(request->dest_addr));
  if (!srx_) c->buffers.resize(receive_depth());  // its own receive queue
  for (std::size_t i = 0; i < c->buffers.size(); ++i) {
    c->buffers[i].context.kind = OpKind::data_receive;
    c->buffers[i].context.index = static_cast<std::uint32_t>(i);
    c->buffers[i].context.link = c;
  }
  c->credit_sends.resize(kCreditSends);
  for (std::size_t i = 0; i < c->credit_sends.size(); ++i) {
    c->credit_sends[i].context.kind = OpKind::credit_send;
    c->credit_sends[i].context.index = static_cast<std::uint32_t>(i);
    c->credit_sends[i].context.link = c;
  }
  std::string error;
  request->tx_attr->size = kCreditSends;  // an incoming endpoint sends only credit messages
  if (!srx_) request->rx_attr->size = receive_depth();
  c->endpoint = make_endpoint(request, c, receive_eq_.get(), receive_queues_.first(), srx_.get(), error);
  if (c->endpoint == nullptr) {
    fi_reject(passive_.get(), request->handle, nullptr, 0);
    events().connection_requests_refused.add();
    host().log(LogLevel::warning, "refused a connection from " + c->remote + ": " + error);
    return;
  }
  std::uint8_t accept_data[8] = {};
  if (srx_) {
    // Its id: a serial no open connection has, and a secret, so that a peer cannot pass for another by guessing.
    while (next_serial_ == 0 || incoming_by_serial_.count(next_serial_) != 0) ++next_serial_;
    c->id = next_serial_++ | (secrets_() << 32);
    incoming_by_serial_[static_cast<std::uint32_t>(c->id)] = c;
    encode_id(c->id, accept_data);
  }
  adopt(std::move(connection));
  // Buffers go up before the connection does: the sender may start as soon as it has credits.
  replenish(*c);
  if (c->closed) return;
  const int result = srx_ ? fi_accept(c->endpoint, accept_data, sizeof accept_data) : fi_accept(c->endpoint, nullptr, 0);
  if (result != 0) {
    events().connection_requests_refused.add();
    close_incoming(*c, "fi_accept: " + fabric_error(result), pt::Ending::normal);
  }
}

OfiTransport::Post OfiTransport::post_receive_buffer(pt::MessageIncoming& base, std::string& error) {
  auto& c = static_cast<OfiIncoming&>(base);
  if (srx_) {
    if (srx_spare_ > 0) {
      --srx_spare_;  // a buffer left in the shared context by a closed connection: it is this one's now
      return Post::posted;
    }
    if (srx_free_.empty()) return Post::no_room;  // a message arriving frees room
    mem::Ref buffer = receive_pool_->allocate(message_settings().receive_buffer_size);
    if (!buffer) return Post::no_memory;
    const ssize_t result = post_shared(std::move(buffer));
    if (result == -FI_EAGAIN) return Post::again;
    if (result != 0) {
      error = "fi_recv on the shared receive context: " + fabric_error(static_cast<int>(result));
      return Post::failed;
    }
    return Post::posted;
  }
  mem::Ref buffer = receive_pool_->allocate(message_settings().receive_buffer_size);
  if (!buffer) return Post::no_memory;
  BufferOp& op = c.buffers[c.posted % c.buffers.size()];
  const ssize_t result = fi_recv(c.endpoint, buffer.data(), buffer.size(), descriptor_of(buffer, registration_slot()), 0,
                                 &op.context.provider);
  if (result == -FI_EAGAIN) return Post::again;  // try again on the next round of the receive thread
  if (result != 0) {
    error = "fi_recv: " + fabric_error(static_cast<int>(result));
    return Post::failed;
  }
  op.buffer = std::move(buffer);
  op.done = false;
  return Post::posted;
}

OfiTransport::Post OfiTransport::post_credits(pt::MessageIncoming& base, const pt::CreditMessage& message, std::string& error) {
  auto& c = static_cast<OfiIncoming&>(base);
  auto free_slot = std::find_if(c.credit_sends.begin(), c.credit_sends.end(), [](const BufferOp& op) { return !op.buffer; });
  if (free_slot == c.credit_sends.end()) return Post::no_room;  // a credit send completes soon and calls again
  mem::Ref buffer = credit_pool_->allocate(pt::kCreditMessageSize);
  if (!buffer) return Post::no_memory;
  pt::encode_credit(message, buffer.data());
  const ssize_t result = fi_send(c.endpoint, buffer.data(), pt::kCreditMessageSize, descriptor_of(buffer, registration_slot()),
                                 0, &free_slot->context.provider);
  if (result == -FI_EAGAIN) return Post::again;
  if (result != 0) {
    error = fabric_error(static_cast<int>(result));
    return Post::failed;
  }
  free_slot->buffer = std::move(buffer);
  return Post::posted;
}

void OfiTransport::close_receive_link(pt::MessageIncoming& base) noexcept {
  auto& c = static_cast<OfiIncoming&>(base);
  if (c.endpoint != nullptr) {
    fi_shutdown(c.endpoint, 0);
    fi_close(&c.endpoint->fid);  // after this the provider writes into none of the buffers below
  }
  c.endpoint = nullptr;
  for (BufferOp& op : c.buffers) op.buffer.reset();
  for (BufferOp& op : c.credit_sends) op.buffer.reset();
  if (c.id != 0 && incoming_by_serial_.erase(static_cast<std::uint32_t>(c.id)) > 0) {
    // Buffers posted on its behalf and not used stay in the shared context for the next connection.
    const std::uint64_t arrived = c.consumed() + c.assembler.messages_waiting();
    srx_spare_ += c.posted > arrived ? c.posted - arrived : 0;
  }
}

ssize_t OfiTransport::post_shared(mem::Ref&& buffer) {
  const std::uint32_t index = srx_free_.back();
  BufferOp& op = srx_slots_[index];
  const ssize_t result = fi_recv(srx_.get(), buffer.data(), buffer.size(), descriptor_of(buffer, registration_slot()), 0,
                                 &op.context.provider);
  if (result != 0) return result;  // the buffer goes back to its pool
  srx_free_.pop_back();
  op.buffer = std::move(buffer);
  srx_posted_.fetch_add(1, std::memory_order_relaxed);
  return 0;
}

void OfiTransport::on_shared_receive(OpContext& op, const fi_cq_data_entry& entry) {
  BufferOp& slot = srx_slots_[op.index];
  mem::Ref buffer = std::move(slot.buffer);
  srx_free_.push_back(op.index);
  if (srx_posted_.load(std::memory_order_relaxed) > 0) srx_posted_.fetch_sub(1, std::memory_order_relaxed);
  OfiIncoming* c = nullptr;
  if ((entry.flags & FI_REMOTE_CQ_DATA) != 0) {
    auto found = incoming_by_serial_.find(static_cast<std::uint32_t>(entry.data));
    if (found != incoming_by_serial_.end() && found->second->id == entry.data) c = found->second;
  }
  if (c == nullptr || c->closed) {
    // A message no open connection answers for: a late one of a connection closed meanwhile, or one whose id is
    // wrong. Dropped; its buffer goes straight back, so that the shared context still holds every buffer the
    // open connections were credited for.
    unattributed_messages_.fetch_add(1, std::memory_order_relaxed);
    if (post_shared(std::move(buffer)) != 0 && srx_spare_ > 0) --srx_spare_;
    return;
  }
  if (c->consumed() + c->assembler.messages_waiting() >= c->posted) {
    close_incoming(*c, "bad stream: the sender sent more messages than it had credits for", pt::Ending::bad);
    return;
  }
  message_arrived(*c, std::move(buffer), entry.len);
}

void OfiTransport::on_receive_completion(OpContext& op, const fi_cq_data_entry& entry) {
  if (op.kind == OpKind::shared_receive) {
    on_shared_receive(op, entry);
    return;
  }
  const std::size_t length = entry.len;
  auto& c = *static_cast<OfiIncoming*>(op.link);
  if (c.closed) return;
  if (op.kind == OpKind::credit_send) {
    c.credit_sends[op.index].buffer.reset();
    send_credits(c);
    return;
  }
  BufferOp& buffer = c.buffers[op.index];
  buffer.done = true;
  buffer.length = length;
  // Messages land in posting order: hand them on in that order.
  while (!c.closed && c.taken < c.posted) {
    BufferOp& next = c.buffers[c.taken % c.buffers.size()];
    if (!next.done) return;
    next.done = false;
    ++c.taken;
    message_arrived(c, std::move(next.buffer), next.length);
  }
}

void OfiTransport::on_receive_error(fid_cq* cq, const fi_cq_err_entry& error) {
  if (error.op_context == nullptr) return;
  auto& op = *static_cast<OpContext*>(error.op_context);
  if (op.kind == OpKind::shared_receive) {
    // A shared buffer's receive failed: its buffer goes back to the pool, and the connection it names (if any)
    // closes. Either way the buffer is no longer in the shared context: one spare fewer.
    srx_slots_[op.index].buffer.reset();
    srx_free_.push_back(op.index);
    if (srx_posted_.load(std::memory_order_relaxed) > 0) srx_posted_.fetch_sub(1, std::memory_order_relaxed);
    if (error.err == FI_ECANCELED) return;  // the shared context is closing
    events().completion_errors.add();
    auto found = incoming_by_serial_.find(static_cast<std::uint32_t>(error.data));
    if (found != incoming_by_serial_.end() && found->second->id == error.data && !found->second->closed)
      close_incoming(*found->second, "receive failed: " + completion_error_text(cq, error),
                     ending_of(*found->second));
    if (srx_spare_ > 0) --srx_spare_;
    return;
  }
  auto& c = *static_cast<OfiIncoming*>(op.link);
  if (c.closed) return;
  if (error.err == FI_ECANCELED) {  // the provider flushed the posted buffers: the connection is gone
    close_incoming(c, "closed by the peer", ending_of(c));
    return;
  }
  events().completion_errors.add();
  close_incoming(c, "receive failed: " + completion_error_text(cq, error), ending_of(c));
}

void OfiTransport::on_receive_event(std::uint32_t event, fid_t fid) {
  if (fid == nullptr || fid->context == nullptr || fid->context == &passive_marker_) return;
  auto& c = *static_cast<OfiIncoming*>(fid->context);
  if (c.closed) return;
  if (event == FI_CONNECTED) {
    incoming_up(c);
    send_credits(c);
  } else if (event == FI_SHUTDOWN) {
    // Messages that arrived before the peer went may still be in the completion queue: take them first.
    auto completion = [this](const fi_cq_data_entry& entry) {
      on_receive_completion(*static_cast<OpContext*>(entry.op_context), entry);
    };
    auto failed = [this](fid_cq* cq, const fi_cq_err_entry& error) { on_receive_error(cq, error); };
    while (receive_queues_.poll(kReadRounds, completion, failed)) {
    }
    if (!c.closed) close_incoming(c, "closed by the peer", ending_of(c));
  }
}

void OfiTransport::on_receive_event_error(const fi_eq_err_entry& error) {
  void* context = error.context != nullptr ? error.context : (error.fid != nullptr ? error.fid->context : nullptr);
  if (context == nullptr || context == &passive_marker_) {
    events().connection_requests_refused.add();
    host().log(LogLevel::warning,
               "connection request on " + local_.text() + " failed: " + event_error_text(receive_eq_.get(), error));
    return;
  }
  auto& c = *static_cast<OfiIncoming*>(context);
  if (c.closed) return;
  close_incoming(c, "connection error: " + event_error_text(receive_eq_.get(), error),
                 c.assembler.mid_frame() ? pt::Ending::truncated : pt::Ending::normal);
}

bool OfiTransport::reap_receive() {
  return drain_queues(
      receive_queues_, receive_eq_.get(),
      [this](const fi_cq_data_entry& entry) { on_receive_completion(*static_cast<OpContext*>(entry.op_context), entry); },
      [this](fid_cq* cq, const fi_cq_err_entry& error) { on_receive_error(cq, error); },
      [this](std::uint32_t kind, const fi_eq_cm_entry& entry, std::size_t) {
        if (kind == FI_CONNREQ) {
          accept(entry.info);
          fi_freeinfo(entry.info);
        } else {
          on_receive_event(kind, entry.fid);
        }
      },
      [this](const fi_eq_err_entry& error) { on_receive_event_error(error); });
}

void OfiTransport::report_wire(MetricSink& sink) const {
  MessageTransport::report_wire(sink);
  sink.setting("shared_receive_context", static_cast<double>(srx_capacity_.load(std::memory_order_relaxed)),
               "buffers the shared receive context holds at most (0: buffers posted to each incoming connection)");
  // The buffers in the shared context stay posted when their connections close (for the next ones): at rest
  // the receive pool holds these.
  if (srx_capacity_.load(std::memory_order_relaxed) > 0)
    sink.gauge("receive_buffers_posted", static_cast<double>(srx_posted_.load(std::memory_order_relaxed)),
                       "receive buffers in the shared receive context now");
  sink.gauge("send_completion_queues", static_cast<double>(send_queues_.count()),
             "send completion queues open (one more whenever the others have no room for another connection)");
  sink.counter("unattributed_messages", static_cast<double>(unattributed_messages_.load(std::memory_order_relaxed)),
               "messages no open incoming connection answered for (late ones of closed connections, or a wrong "
               "connection id): dropped, their buffers posted again");
}

}  // namespace daqx::ptofi
