// ptofi: the libfabric peer transport over reliable connected endpoints (FI_EP_MSG).
//
// As in pttcp, a connection carries frames one way: outgoing connections (we connected) carry our frames
// to a peer's endpoint, incoming ones (accepted on our passive endpoint) carry frames to us, and only
// credit messages travel back. The send thread serves the send completion queue and the connection
// events of outgoing endpoints; the receive thread serves the passive endpoint, incoming endpoints and
// their completion queue. Each waits on its queues' file descriptors through epoll, or busy-polls.
//
// Every posted operation carries an OpContext whose memory lives as long as the transport: a completion
// that arrives after its connection was torn down finds a connection marked closed and is ignored.
#pragma once

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>

#include <atomic>
#include <chrono>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "daqx/executive/transport.hpp"
#include "daqx/executive/transport_counters.hpp"
#include "daqx/mempool/ref_ring.hpp"
#include "fabric.hpp"
#include "daqx/pt/credit_flow.hpp"

namespace daqx::ptofi {

using pt::CreditMessage;
using pt::decode_credit;
using pt::encode_credit;
using pt::kCreditMessageSize;
using pt::kNoRegistration;
using pt::MessagePieces;
using pt::next_message;
using pt::ReceiveCredits;
using pt::SendCredits;
using pt::SendCursor;

struct Settings {
  std::string provider = "tcp";
  bool busy_poll = false;          // else wait on the queues' file descriptors through epoll
  bool connect_at_start = true;    // else on the first post
  std::size_t recv_buffer_size = 128 * 1024;
  std::size_t recv_depth = 64;     // buffers posted per incoming connection
  std::size_t recv_pool_bytes = std::size_t{256} << 20;
  std::size_t send_queue = 4096;   // frames queued per connection before would_block
  std::size_t tx_depth = 128;      // messages in flight per outgoing connection (capped by the provider)
  enum class Registration { automatic, always, never } registration = Registration::automatic;
  std::chrono::milliseconds reconnect_min{50};
  std::chrono::milliseconds reconnect_max{2000};
  std::uint32_t max_frame_size = kDefaultMaxFrameSize;

  static Settings from(const ParamSet& params, std::uint32_t max_frame_size);
};

std::vector<ParamSpec> parameter_specs();

class OfiTransport final : public Transport {
 public:
  explicit OfiTransport(TransportHost& host);
  ~OfiTransport() override;

  std::string_view protocol() const noexcept override { return "ofi"; }
  void listen(const EndpointAddress& local) override;
  PeerId connect(const EndpointAddress& remote) override;
  SendStatus post(PeerId peer, mem::Ref& frame) noexcept override;
  void open_connections() override;
  void stop() override;
  void report(MetricSink& sink) const override;
  std::vector<ConnectionInfo> connections() const override;

 private:
  using Counters = ConnectionCounters;

  // What libfabric hands back with a completion. The provider may use `provider` (FI_CONTEXT modes).
  enum class OpKind : std::uint8_t { data_send, credit_receive, data_receive, credit_send };
  struct OpContext {
    fi_context2 provider{};
    OpKind kind = OpKind::data_send;
    std::uint32_t index = 0;  // slot in its connection's ring
    void* link = nullptr;     // SendLink* or Incoming*
  };
  struct SendOp {
    OpContext context;
    bool done = false;
    mem::Ref frame;              // on the message that ends a frame: the frame, released when all is sent
    std::size_t frame_bytes = 0;
  };
  struct BufferOp {  // a posted receive buffer, or a credit message on its way
    OpContext context;
    mem::Ref buffer;
    bool done = false;
    std::size_t length = 0;
  };

  struct Outgoing;
  // One endpoint's life on an outgoing connection, from fi_connect to teardown. A reconnection makes a
  // new one; the old one is kept (closed) so that late completions find valid memory.
  struct SendLink {
    Outgoing* owner = nullptr;
    fid_ep* endpoint = nullptr;
    bool connected = false;
    bool closed = false;
    std::string failure;           // set by a poster whose fi_sendv failed: the send thread tears down
    SendCredits credits;
    std::vector<SendOp> ops;       // ring of messages in flight
    std::uint64_t ops_posted = 0;  // messages posted in total; slot = count % size
    std::uint64_t ops_retired = 0;
    std::vector<BufferOp> credit_buffers;  // posted receives for credit messages
  };

  struct Outgoing {
    enum class State { idle, connecting, up, down };
    PeerId id = 0;
    EndpointAddress remote;
    InfoPtr info;                  // fi_getinfo for the remote address: each endpoint is made from it
    std::mutex mutex;              // posting threads and the send thread
    State state = State::idle;
    bool ever_up = false;
    bool connect_requested = false;  // first use: the send thread connects
    SendLink* link = nullptr;
    explicit Outgoing(std::size_t capacity) : queue(capacity) {}
    mem::RefRing queue;            // frames not yet posted whole; the first may be partly posted
    SendCursor cursor;             // within queue.front()
    bool waiting_for_credits = false;
    std::chrono::steady_clock::time_point retry_at;
    std::chrono::milliseconds backoff{0};
    std::atomic<bool> want_ready{false};
    Counters counters;
    std::atomic<std::uint64_t> credit_waits{0};  // times it had frames to send and no credits
  };

  struct Incoming {
    PeerId id = 0;
    std::string remote;
    fid_ep* endpoint = nullptr;
    std::atomic<bool> up{false};      // atomics: the control server reads them for its pages
    std::atomic<bool> closed{false};
    explicit Incoming(std::size_t threshold) : credits(threshold) {}
    std::vector<BufferOp> buffers;   // ring of posted receive buffers
    std::uint64_t posted = 0;        // buffers posted in total; slot = count % size
    std::uint64_t consumed = 0;      // messages taken out of the ring in order
    bool waiting_for_pool = false;
    ReceiveCredits credits;
    std::vector<BufferOp> credit_sends;
    Frame assembling;                // the frame being chained from messages
    std::size_t have = 0;            // its bytes so far (0: the next message starts a frame)
    Frame pending;                   // complete, but its target was busy
    bool has_pending = false;
    bool paused = false;
    Counters counters;
  };

  // Fabric objects.
  void open_fabric(const fi_info& info);
  fid_ep* make_endpoint(fi_info* info, void* context, fid_eq* eq, fid_cq* cq, std::string& error);

  // Send side (send thread; posters under Outgoing::mutex).
  void send_loop(std::stop_token stop);
  void start_connect(Outgoing& c);  // under c.mutex, send thread
  void pump(Outgoing& c) noexcept;  // under c.mutex: posts what credits and the ring allow
  void teardown(Outgoing& c, const std::string& reason, bool& went_down);  // under c.mutex, send thread
  void on_send_completion(OpContext& op);
  void on_send_error(const fi_cq_err_entry& error);
  void on_send_event(std::uint32_t event, fid_t fid);
  void on_send_event_error(const fi_eq_err_entry& error);
  void post_credit_receive(SendLink& link, BufferOp& op, std::string& error);

  // Receive side (receive thread only).
  void receive_loop(std::stop_token stop);
  void accept(fi_info* request);
  void on_receive_completion(OpContext& op, std::size_t length);
  void on_receive_error(const fi_cq_err_entry& error);
  void on_receive_event(std::uint32_t event, fid_t fid);
  void on_receive_event_error(const fi_eq_err_entry& error);
  void consume(Incoming& c);         // takes completed messages in order, assembles, delivers
  bool take_message(Incoming& c, mem::Ref&& buffer, std::size_t length);  // false: stop consuming
  bool deliver(Incoming& c, Frame& frame);
  void replenish(Incoming& c);       // posts buffers up to the depth, as the pool allows
  void send_credits(Incoming& c);
  enum class Ending { normal, truncated, bad };
  void close_incoming(Incoming& c, const std::string& reason, Ending ending);
  void resume_incoming();

  // Waiting: one epoll set per thread over its completion queue, event queue and a wake-up eventfd.
  struct Waiter {
    int epoll = -1;
    int wake = -1;
  };
  void make_waiter(Waiter& waiter, fid_cq* cq, fid_eq* eq);
  void wait(Waiter& waiter, fid_cq* cq, fid_eq* eq, std::chrono::milliseconds limit);
  static void wake(Waiter& waiter) noexcept;

  TransportHost& host_;
  Settings settings_;
  InfoPtr hints_;                // checked at construction: the provider has what ptofi needs
  mem::Pool* receive_pool_ = nullptr;
  mem::Pool* credit_pool_ = nullptr;
  EndpointAddress local_;

  FidPtr<fid_fabric> fabric_;
  FidPtr<fid_domain> domain_;
  FidPtr<fid_eq> send_eq_;
  FidPtr<fid_eq> receive_eq_;
  FidPtr<fid_cq> send_cq_;
  FidPtr<fid_cq> receive_cq_;
  FidPtr<fid_pep> passive_;
  int passive_marker_ = 0;       // the passive endpoint's context: tells its events from an endpoint's
  std::unique_ptr<MemoryRegistrar> registrar_;
  std::size_t registrar_slot_ = kNoRegistration;
  std::size_t iov_limit_ = 1;
  std::size_t tx_depth_ = 0;
  std::size_t recv_depth_ = 0;
  Waiter send_waiter_;
  Waiter receive_waiter_;
  std::mutex open_mutex_;        // opening the fabric (listen or the first connect)

  static constexpr std::size_t kMaxPeers = 4096;
  static constexpr std::size_t kCreditBuffers = 8;  // credit receives posted per outgoing endpoint
  static constexpr std::size_t kCreditSends = 4;    // credit messages in flight per incoming endpoint
  mutable std::mutex peers_mutex_;
  std::vector<std::unique_ptr<Outgoing>> outgoing_;  // reserved to kMaxPeers: post() reads without a lock
  std::atomic<std::size_t> outgoing_count_{0};
  std::list<std::unique_ptr<SendLink>> links_;       // every outgoing endpoint's life (send thread)
  std::list<std::unique_ptr<Incoming>> incoming_;    // receive thread; peers_mutex_ for structural changes
  PeerId next_incoming_id_ = 1u << 20;

  std::atomic<bool> resume_requested_{false};
  std::atomic<bool> send_attention_{false};  // the send thread should look at every connection: a connect
                                             // request, a poster's failure, a post the provider refused
  std::uint64_t retired_frames_received_ = 0;  // of closed incoming connections (peers_mutex_)
  std::uint64_t retired_bytes_received_ = 0;
  std::atomic<std::uint64_t> accepted_{0};
  std::atomic<std::uint64_t> refused_requests_{0};
  std::atomic<std::uint64_t> bad_streams_{0};
  std::atomic<std::uint64_t> closed_by_peer_{0};
  std::atomic<std::uint64_t> truncated_frames_{0};
  std::atomic<std::uint64_t> receive_pool_waits_{0};
  std::atomic<std::uint64_t> delivery_waits_{0};
  std::atomic<std::uint64_t> completion_errors_{0};
  std::jthread send_thread_;
  std::jthread receive_thread_;
  std::atomic<bool> stopped_{false};
};

}  // namespace daqx::ptofi
