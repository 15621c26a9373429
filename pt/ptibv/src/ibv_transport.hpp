// ptibv: the InfiniBand verbs peer transport (RC queue pairs, send/receive, rdma_cm by IP and port), on the
// shared connection layer (pt/base, message transports). What is its own: the device, protection domain,
// completion queues and shared receive queue, queue pairs per connection and their connection protocol
// (wire.hpp), and how one message, one receive buffer and one credit message are posted with verbs.
//
// The send thread owns the send completion queues (data sends and credit receives of outgoing QPs; one more
// whenever the others have no room for another QP) and the rdma_cm events of outgoing connections; the receive
// thread owns the receive completion queue (data receives and credit sends of incoming QPs), the listener and
// the events of incoming connections.
//
// Queue pairs are created and moved through INIT, RTR and RTS by ptibv itself (rdma_cm without a QP of its
// own), so that the path MTU and the GID index can be set from the configuration.
//
// Every work request names its connection by a serial number (wr_id); a completion whose connection is gone
// (torn down, its QP destroyed, its blocks returned) finds no serial and is ignored.
#pragma once

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "daqx/pt/message_transport.hpp"
#include "daqx/pt/socket_address.hpp"
#include "completion_queues.hpp"
#include "settings.hpp"
#include "verbs.hpp"
#include "wire.hpp"

namespace daqx::ptibv {

// ptibv's own counts, beside those every transport keeps.
struct IbvCounters : CounterSet {
  Counter credit_messages{*this, "credit_messages", "credit messages sent to senders"};
  Counter inline_messages{*this, "inline_messages", "messages sent inline (copied into the work request)"};
  Counter qp_errors{*this, "qp_errors", "connections torn down by a queue pair error"};
  Counter async_events{*this, "async_events", "asynchronous device events (logged)"};
  Counter receive_buffers_posted{*this, "receive_buffers_posted",
                                 "receive buffers posted now (per connection, or in the shared receive queue)",
                                 Metric::Kind::gauge};
};

class IbvTransport final : public pt::MessageTransport {
 public:
  explicit IbvTransport(TransportHost& host);
  ~IbvTransport() override;  // the rdma_cm event channels go after stop()
  void listen(const EndpointAddress& local) override;

 private:
  struct Outgoing : pt::MessageOutgoing {
    using MessageOutgoing::MessageOutgoing;
    pt::SocketAddress address;
  };
  // One queue pair's life on an outgoing connection, from rdma_resolve_addr to teardown. A reconnection makes
  // a new one with a new serial.
  struct Link : pt::SendLink {
    Outgoing* owner = nullptr;
    std::uint32_t serial = 0;
    rdma_cm_id* id = nullptr;
    ibv_qp* qp = nullptr;
    CompletionQueue* queue = nullptr;  // the send completion queue its entries are reserved in
    std::uint32_t max_inline = 0;
    std::uint64_t unsignaled = 0;          // messages posted since the last one that asks for a completion
    std::vector<mem::Ref> credit_buffers;  // posted receives for credit messages
    std::uint32_t credit_buffers_posted = 0;  // in total, modulo 2^32: each data message's immediate value
  };
  struct Incoming : pt::MessageIncoming {
    using MessageIncoming::MessageIncoming;
    std::uint32_t serial = 0;
    rdma_cm_id* cm_id = nullptr;
    ibv_qp* qp = nullptr;
    CreditMessageAllowance allowance;
    std::uint32_t credit_sends = 0;  // credit messages in flight
  };
  // A receive buffer posted to a QP's receive queue or to the shared one.
  struct ReceiveSlot {
    mem::Ref buffer;
    std::uint32_t generation = 0;
    Incoming* owner = nullptr;  // nullptr: in the shared receive queue
  };

  // Device objects (opened by the first listen or connect).
  void open_device(ibv_context* context);
  ibv_context* choose_device(const sockaddr* address);
  // An outgoing QP's completions go to `queue`, an incoming one's (queue nullptr) to the receive queue.
  ibv_qp* make_qp(rdma_cm_id* id, CompletionQueue* queue, std::uint32_t& max_inline, std::string& error);
  bool move_qp(rdma_cm_id* id, ibv_qp* qp, ibv_qp_state state, std::string& error);
  static SleepCheck arm(CompletionQueues& queues);
  void refine_capabilities(TransportCapabilities& c) const override;
  void stop_endpoints() noexcept override;  // the listener, the shared receive queue and its buffers
  void stop_device() noexcept override;     // completion queues and channels, the protection domain

  // Sending (pt::MessageTransport).
  std::unique_ptr<pt::OutgoingConnection> make_outgoing(const EndpointAddress& remote) override;
  void start_connect(pt::OutgoingConnection& c) override;
  Posted post_message(pt::MessageOutgoing& c, pt::SendLink& link, const Message& message) noexcept override;
  std::size_t close_link(pt::OutgoingConnection& c) noexcept override;
  bool reap_send() override;
  SleepCheck ready_to_sleep_send() override { return arm(send_queues_); }
  void on_send_ready(void* tag, std::uint32_t events) override;
  void on_send_completion(const ibv_wc& wc);
  void on_send_event(rdma_cm_event& event);
  bool post_credit_receive(Link& link, std::size_t index, std::string& error);

  // Receiving.
  bool reap_receive() override;
  SleepCheck ready_to_sleep_receive() override { return arm(receive_queues_); }
  void on_receive_ready(void* tag, std::uint32_t events) override;
  void receive_housekeeping(Clock::time_point now) override;
  void accept(rdma_cm_id* id, const rdma_conn_param& param);
  void on_receive_completion(const ibv_wc& wc);
  void on_receive_event(rdma_cm_event& event);
  void on_async_events();
  bool post_receive(Incoming* owner, mem::Ref&& buffer, std::string& error);
  Post post_receive_buffer(pt::MessageIncoming& c, std::string& error) override;
  Post post_credits(pt::MessageIncoming& c, const pt::CreditMessage& message, std::string& error) override;
  void close_receive_link(pt::MessageIncoming& c) noexcept override;
  void report_wire(MetricSink& sink) const override;

  Settings settings_;
  std::unique_ptr<DeviceList> devices_;
  EndpointAddress local_;

  mem::Pool* receive_pool_ = nullptr;
  mem::Pool* credit_pool_ = nullptr;
  rdma_event_channel* send_events_ = nullptr;
  rdma_event_channel* receive_events_ = nullptr;
  rdma_cm_id* listener_ = nullptr;
  ibv_context* context_ = nullptr;
  ibv_device_attr device_attr_{};
  int numa_node_ = -1;
  ibv_pd* pd_ = nullptr;
  CompletionQueues send_queues_;     // send thread
  CompletionQueues receive_queues_;  // receive thread: one queue
  ibv_srq* srq_ = nullptr;
  std::size_t srq_capacity_ = 0;
  int cm_marker_ = 0;       // waiter tag of the rdma_cm channels: reap_* reads them
  int async_marker_ = 0;    // waiter tag of the device's asynchronous events
  bool async_ready_ = false;
  Clock::time_point next_async_check_{};
  std::mutex open_mutex_;

  static constexpr std::uint32_t kCreditBuffers = 8;  // credit receives posted per outgoing QP
  static constexpr std::uint32_t kCreditSends = 4;    // credit messages in flight per incoming QP
  std::unordered_map<std::uint32_t, std::unique_ptr<Link>> links_;  // send thread (and stop)
  std::uint32_t next_link_serial_ = 1;

  std::unordered_map<std::uint32_t, Incoming*> incoming_by_qp_;      // qp_num -> connection (receive thread)
  std::unordered_map<std::uint32_t, Incoming*> incoming_by_serial_;  // rdma_cm id context -> connection
  std::vector<ReceiveSlot> slots_;
  std::vector<std::uint32_t> free_slots_;
  std::size_t srq_spare_ = 0;     // posted in the shared queue for nobody (their connection closed)
  std::size_t srq_posted_ = 0;    // buffers in the shared queue now
  std::size_t receive_cq_use_ = 0;
  std::uint32_t next_incoming_serial_ = 1;

  IbvCounters ibv_counters_;
};

}  // namespace daqx::ptibv
