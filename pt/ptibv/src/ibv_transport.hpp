// ptibv: the InfiniBand verbs peer transport (RC queue pairs, send/receive, rdma_cm by IP and port).
//
// As in pttcp and ptofi, a connection carries frames one way: outgoing connections (we called
// rdma_connect) carry our frames to a peer, incoming ones (we accepted) carry frames to us, and only
// credit messages travel back (wire.hpp). The send thread owns the send completion queue (data sends and
// credit receives of outgoing QPs) and the rdma_cm events of outgoing connections; the receive thread
// owns the receive completion queue (data receives and credit sends of incoming QPs), the listener and
// the events of incoming connections. The two share no lock on the data path: a posting thread and the
// send thread meet only on one outgoing connection's mutex.
//
// Queue pairs are created and moved through INIT, RTR and RTS by ptibv itself (rdma_cm without a QP of
// its own), so that the path MTU and the GID index can be set from the configuration.
//
// Every work request names its connection by a serial number (wr_id); a completion whose connection is
// gone (torn down, its QP destroyed, its blocks returned) finds no serial and is ignored.
#pragma once

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include <atomic>
#include <chrono>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "daqx/executive/transport.hpp"
#include "daqx/executive/transport_counters.hpp"
#include "daqx/mempool/ref_ring.hpp"
#include "daqx/pt/credit_flow.hpp"
#include "settings.hpp"
#include "verbs.hpp"
#include "wire.hpp"

namespace daqx::ptibv {

class IbvTransport final : public Transport {
 public:
  explicit IbvTransport(TransportHost& host);
  ~IbvTransport() override;

  std::string_view protocol() const noexcept override { return "ibv"; }
  void listen(const EndpointAddress& local) override;
  PeerId connect(const EndpointAddress& remote) override;
  SendStatus post(PeerId peer, mem::Ref& frame) noexcept override;
  void open_connections() override;
  void stop() override;
  void report(MetricSink& sink) const override;
  std::vector<ConnectionInfo> connections() const override;

 private:
  using Counters = ConnectionCounters;

  struct SendOp {
    std::uint64_t sequence = 0;  // its number among the link's messages (ops_posted when posted)
    mem::Ref frame;  // on the message that ends a frame: the frame, released when all before it is sent
    std::size_t frame_bytes = 0;
  };

  struct Outgoing;
  // One queue pair's life on an outgoing connection, from rdma_resolve_addr to teardown. A reconnection
  // makes a new one with a new serial.
  struct SendLink {
    Outgoing* owner = nullptr;
    std::uint32_t serial = 0;
    rdma_cm_id* id = nullptr;
    ibv_qp* qp = nullptr;
    bool connected = false;
    std::string failure;            // set by a poster whose ibv_post_send failed: the send thread tears down
    pt::SendCredits credits;
    std::uint32_t max_inline = 0;
    std::vector<SendOp> ops;        // ring of messages in flight
    std::uint64_t ops_posted = 0;   // slot = count % size
    std::uint64_t ops_retired = 0;
    std::uint64_t unsignaled = 0;   // messages posted since the last one that asks for a completion
    bool unsignaled_hold_blocks = false;  // one of those keeps a frame's blocks until a completion retires it
    std::vector<mem::Ref> credit_buffers;  // posted receives for credit messages
    std::uint32_t credit_buffers_posted = 0;  // in total, modulo 2^32: each data message's immediate value
  };

  struct Outgoing {
    enum class State { idle, connecting, up, down };
    PeerId id = 0;
    EndpointAddress remote;
    sockaddr_storage address{};
    std::mutex mutex;               // posting threads and the send thread
    State state = State::idle;
    bool ever_up = false;
    bool connect_requested = false;
    SendLink* link = nullptr;
    explicit Outgoing(std::size_t capacity) : queue(capacity) {}
    mem::RefRing queue;             // frames not yet posted whole; the first may be partly posted
    pt::SendCursor cursor;          // within queue.front()
    bool waiting_for_credits = false;
    std::chrono::steady_clock::time_point retry_at;
    std::chrono::milliseconds backoff{0};
    std::atomic<bool> want_ready{false};
    Counters counters;
    std::atomic<std::uint64_t> credit_waits{0};
    std::atomic<std::uint64_t> inline_frames{0};
  };

  struct Incoming {
    PeerId id = 0;
    std::uint32_t serial = 0;
    std::string remote;
    rdma_cm_id* cm_id = nullptr;
    ibv_qp* qp = nullptr;
    std::atomic<bool> up{false};     // atomics: the control server reads them for its pages
    std::atomic<bool> closed{false};
    explicit Incoming(std::size_t threshold) : credits(threshold) {}
    pt::ReceiveCredits credits;
    CreditMessageAllowance allowance;
    std::uint64_t posted = 0;        // buffers posted (or set aside in the shared queue) for this connection
    std::uint64_t consumed = 0;      // messages taken into frames
    std::deque<std::pair<mem::Ref, std::uint32_t>> held;  // arrived while a delivery waits
    std::uint32_t credit_sends = 0;  // credit messages in flight
    bool waiting_for_pool = false;
    Frame assembling;
    std::size_t have = 0;
    Frame pending;
    bool has_pending = false;
    bool paused = false;
    Counters counters;
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
  ibv_qp* make_qp(rdma_cm_id* id, bool outgoing, std::uint32_t& max_inline, std::string& error);
  bool move_qp(rdma_cm_id* id, ibv_qp* qp, ibv_qp_state state, std::string& error);

  // Send side.
  void send_loop(std::stop_token stop);
  void start_connect(Outgoing& c);
  void pump(Outgoing& c) noexcept;
  void teardown(Outgoing& c, const std::string& reason, bool& went_down);
  void on_send_completion(const ibv_wc& wc);
  void on_send_event(rdma_cm_event& event);
  bool post_credit_receive(SendLink& link, std::size_t index, std::string& error);
  void check_outgoing(std::chrono::steady_clock::time_point now, std::chrono::steady_clock::time_point& next_check);

  // Receive side.
  void receive_loop(std::stop_token stop);
  void accept(rdma_cm_id* id, const rdma_conn_param& param);
  void on_receive_completion(const ibv_wc& wc);
  void on_receive_event(rdma_cm_event& event);
  void on_async_events();
  bool take_message(Incoming& c, mem::Ref&& buffer, std::size_t length);
  void consume_held(Incoming& c);
  bool deliver(Incoming& c, Frame& frame);
  void replenish(Incoming& c);
  bool post_receive(Incoming* owner, mem::Ref&& buffer, std::string& error);
  void send_credits(Incoming& c);
  enum class Ending { normal, truncated, bad };
  void close_incoming(Incoming& c, const std::string& reason, Ending ending);
  void resume_incoming();

  // Waiting: one epoll set per thread over its completion channel, rdma_cm channel and a wake-up eventfd.
  struct Waiter {
    int epoll = -1;
    int wake = -1;
    ibv_comp_channel* channel = nullptr;
    ibv_cq* cq = nullptr;
    bool armed = false;
    unsigned unacked = 0;
    int extra_fd = -1;         // the device's asynchronous event fd (receive thread)
    bool extra_ready = false;
  };
  void make_waiter(Waiter& waiter, int cm_fd, int extra_fd);
  void wait(Waiter& waiter, std::chrono::milliseconds limit);
  static void wake(Waiter& waiter) noexcept;

  TransportHost& host_;
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
  ibv_cq* send_cq_ = nullptr;
  ibv_cq* receive_cq_ = nullptr;
  ibv_srq* srq_ = nullptr;
  std::size_t srq_capacity_ = 0;
  std::unique_ptr<MemoryRegistrar> registrar_;
  std::size_t registrar_slot_ = pt::kNoRegistration;
  std::size_t max_sge_ = 1;
  std::size_t send_depth_ = 0;
  std::size_t recv_depth_ = 0;
  std::size_t send_cq_size_ = 0;
  std::size_t receive_cq_size_ = 0;
  Waiter send_waiter_;
  Waiter receive_waiter_;
  std::mutex open_mutex_;

  static constexpr std::size_t kMaxPeers = 4096;
  static constexpr std::uint32_t kCreditBuffers = 8;  // credit receives posted per outgoing QP
  static constexpr std::uint32_t kCreditSends = 4;    // credit messages in flight per incoming QP
  mutable std::mutex peers_mutex_;
  std::vector<std::unique_ptr<Outgoing>> outgoing_;  // reserved to kMaxPeers: post() reads without a lock
  std::atomic<std::size_t> outgoing_count_{0};
  std::unordered_map<std::uint32_t, std::unique_ptr<SendLink>> links_;  // send thread (and stop)
  std::uint32_t next_link_serial_ = 1;
  std::size_t send_cq_use_ = 0;   // completion entries the live links may need at once (send thread)

  std::vector<std::unique_ptr<Incoming>> incoming_;  // receive thread; peers_mutex_ for structural changes
  std::unordered_map<std::uint32_t, Incoming*> incoming_by_qp_;  // qp_num -> connection (receive thread)
  std::vector<ReceiveSlot> slots_;
  std::vector<std::uint32_t> free_slots_;
  std::size_t srq_spare_ = 0;     // posted in the shared queue for nobody (their connection closed)
  std::size_t srq_posted_ = 0;    // buffers in the shared queue now
  std::size_t receive_cq_use_ = 0;
  std::uint32_t next_incoming_serial_ = 1;
  PeerId next_incoming_id_ = 1u << 20;

  std::atomic<bool> resume_requested_{false};
  std::atomic<bool> send_attention_{false};
  std::uint64_t retired_frames_received_ = 0;
  std::uint64_t retired_bytes_received_ = 0;
  std::atomic<std::uint64_t> accepted_{0};
  std::atomic<std::uint64_t> refused_requests_{0};
  std::atomic<std::uint64_t> bad_streams_{0};
  std::atomic<std::uint64_t> closed_by_peer_{0};
  std::atomic<std::uint64_t> truncated_frames_{0};
  std::atomic<std::uint64_t> receive_pool_waits_{0};
  std::atomic<std::uint64_t> delivery_waits_{0};
  std::atomic<std::uint64_t> completion_errors_{0};
  std::atomic<std::uint64_t> qp_errors_{0};
  std::atomic<std::uint64_t> async_events_{0};
  std::atomic<std::uint64_t> credit_messages_{0};
  std::atomic<std::uint64_t> receive_buffers_posted_{0};  // slots holding a posted buffer (for the pages)
  std::jthread send_thread_;
  std::jthread receive_thread_;
  std::atomic<bool> stopped_{false};
};

}  // namespace daqx::ptibv
