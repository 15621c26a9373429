// ptofi: the libfabric peer transport over reliable connected endpoints (FI_EP_MSG), on the shared
// connection layer (pt/base, message transports). What is its own: the fabric, domain, queues and passive
// endpoint, endpoints per connection, and how one message, one receive buffer and one credit message are
// posted with libfabric.
//
// The send thread reaps the send completion queues (another is opened whenever none has room for another
// endpoint's sends and credit receives) and the connection events of outgoing endpoints; the receive thread the
// passive endpoint, incoming endpoints and their completion queue. Each waits on its
// queues' file descriptors, or busy-polls.
//
// Every posted operation carries an OpContext whose memory lives as long as the transport: a completion
// that arrives after its connection was torn down finds a connection marked closed and is ignored.
//
// Receive buffers go to one shared receive context (fi_srx_context) when the provider has them and carries 8
// bytes of remote CQ data: the receiver gives each incoming connection an id (a serial and a random secret) in
// its accept data, and the sender puts it on every data message, which names the connection a buffer was
// taken for. Each connection is still credited only the buffers posted on its behalf (pt/base), so no sender
// can use up another's. Otherwise buffers are posted to each incoming endpoint's own receive queue.
#pragma once

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>

#include <atomic>
#include <list>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include "daqx/pt/message_transport.hpp"
#include "daqx/pt/socket_address.hpp"
#include "completion_queues.hpp"
#include "fabric.hpp"
#include "settings.hpp"

namespace daqx::ptofi {

// What libfabric hands back with a completion. The provider may use `provider` (FI_CONTEXT modes).
enum class OpKind : std::uint8_t { data_send, credit_receive, data_receive, credit_send, shared_receive };
struct OpContext {
  fi_context2 provider{};
  OpKind kind = OpKind::data_send;
  std::uint32_t index = 0;  // slot in its connection's ring, or in the shared receive context's slots
  void* link = nullptr;     // OfiLink* or OfiIncoming*; nullptr for a shared receive
};
struct BufferOp {  // a posted receive buffer, or a credit message on its way
  OpContext context;
  mem::Ref buffer;
  bool done = false;
  std::size_t length = 0;
};

struct OfiOutgoing : pt::MessageOutgoing {
  using MessageOutgoing::MessageOutgoing;
  InfoPtr info;  // fi_getinfo for the remote address: each endpoint is made from it
};
// One endpoint's life on an outgoing connection. A reconnection makes a new one; the old one is kept
// (closed) so that late completions find valid memory.
struct OfiLink : pt::SendLink {
  OfiOutgoing* owner = nullptr;
  fid_ep* endpoint = nullptr;
  CompletionQueue* queue = nullptr;      // the send completion queue its entries are reserved in
  std::vector<OpContext> sends;          // one per slot of the ring of messages in flight
  std::vector<BufferOp> credit_buffers;  // posted receives for credit messages
  bool send_id = false;                  // the receiver shares a receive context: each message carries id
  std::uint64_t id = 0;                  // the connection's id at the receiver (its accept data)
};
struct OfiIncoming : pt::MessageIncoming {
  using MessageIncoming::MessageIncoming;
  fid_ep* endpoint = nullptr;
  std::vector<BufferOp> buffers;      // ring of posted receive buffers; slot = posted % size (own receive queue)
  std::uint64_t taken = 0;            // messages taken out of the ring, in order
  std::vector<BufferOp> credit_sends;
  std::uint64_t id = 0;               // with a shared receive context: serial (low half) and secret (high half)
};

class OfiTransport final : public pt::MessageTransport {
 public:
  explicit OfiTransport(TransportHost& host);
  void listen(const EndpointAddress& local) override;

 private:
  // Fabric objects.
  void open_fabric(const fi_info& info);
  // An endpoint bound to eq and cq, and to the shared receive context srx unless that is null.
  fid_ep* make_endpoint(fi_info* info, void* context, fid_eq* eq, fid_cq* cq, fid_ep* srx, std::string& error);
  void open_shared_receive(const fi_info& info);
  void add_wait_object(pt::Waiter& waiter, fid* object);
  SleepCheck ready_to_sleep(const CompletionQueues& queues);

  // Sending (pt::MessageTransport).
  std::unique_ptr<pt::OutgoingConnection> make_outgoing(const EndpointAddress& remote) override;
  void start_connect(pt::OutgoingConnection& c) override;
  Posted post_message(pt::MessageOutgoing& c, pt::SendLink& link, const Message& message) noexcept override;
  std::size_t close_link(pt::OutgoingConnection& c) noexcept override;
  bool reap_send() override;
  SleepCheck ready_to_sleep_send() override;
  void on_send_completion(OpContext& op, std::size_t length);
  void on_send_error(fid_cq* cq, const fi_cq_err_entry& error);
  void on_send_event(std::uint32_t event, const fi_eq_cm_entry& entry, std::size_t data_length);
  void on_send_event_error(const fi_eq_err_entry& error);
  bool post_credit_receive(OfiLink& link, BufferOp& op, std::string& error);

  // Receiving.
  bool reap_receive() override;
  SleepCheck ready_to_sleep_receive() override;
  void accept(fi_info* request);
  void on_receive_completion(OpContext& op, const fi_cq_data_entry& entry);
  void on_shared_receive(OpContext& op, const fi_cq_data_entry& entry);
  // Posts `buffer` to the shared receive context in a free slot (there must be one); fi_recv's result.
  ssize_t post_shared(mem::Ref&& buffer);
  void on_receive_error(fid_cq* cq, const fi_cq_err_entry& error);
  void on_receive_event(std::uint32_t event, fid_t fid);
  void on_receive_event_error(const fi_eq_err_entry& error);
  Post post_receive_buffer(pt::MessageIncoming& c, std::string& error) override;
  Post post_credits(pt::MessageIncoming& c, const pt::CreditMessage& message, std::string& error) override;
  void close_receive_link(pt::MessageIncoming& c) noexcept override;

  void stop_endpoints() noexcept override;
  void stop_device() noexcept override;
  void refine_capabilities(TransportCapabilities& c) const override;
  void report_wire(MetricSink& sink) const override;

  Settings settings_;
  mem::Pool* receive_pool_ = nullptr;
  mem::Pool* credit_pool_ = nullptr;
  EndpointAddress local_;

  FidPtr<fid_fabric> fabric_;
  FidPtr<fid_domain> domain_;
  FidPtr<fid_eq> send_eq_;
  FidPtr<fid_eq> receive_eq_;
  CompletionQueues send_queues_;     // send thread; one more whenever no queue has room for another endpoint
  CompletionQueues receive_queues_;  // receive thread: one queue (the receive budget bounds what it holds)
  FidPtr<fid_pep> passive_;
  int passive_marker_ = 0;  // the passive endpoint's context: tells its events from an endpoint's
  int wait_marker_ = 0;     // the tag of the queues' descriptors in the waiters: reap_* reads the queues
  std::mutex open_mutex_;   // opening the fabric (listen or the first connect)

  // The shared receive context (receive thread) and its buffers: slots sized once, as the provider keeps
  // pointers to their contexts.
  FidPtr<fid_ep> srx_;
  std::vector<BufferOp> srx_slots_;
  std::vector<std::uint32_t> srx_free_;
  std::atomic<std::size_t> srx_posted_{0};  // buffers in the shared context now (written by the receive thread)
  std::size_t srx_spare_ = 0;   // of those, posted for connections that closed: the next post takes one
  std::unordered_map<std::uint32_t, OfiIncoming*> incoming_by_serial_;
  std::uint32_t next_serial_ = 1;
  std::mt19937_64 secrets_{std::random_device{}()};
  std::atomic<std::uint64_t> unattributed_messages_{0};
  std::atomic<std::size_t> srx_capacity_{0};

  static constexpr std::size_t kCreditBuffers = 8;  // credit receives posted per outgoing endpoint
  static constexpr std::size_t kCreditSends = 4;    // credit messages in flight per incoming endpoint
  std::list<std::unique_ptr<OfiLink>> links_;          // every outgoing endpoint's life (send thread)
};

}  // namespace daqx::ptofi
