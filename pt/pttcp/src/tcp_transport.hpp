// pttcp: the TCP peer transport. Outgoing connections carry frames to peers' endpoints; incoming ones
// (accepted on our endpoint) carry frames to us. A send thread serves outgoing sockets and a receive
// thread serves the listener and incoming sockets, each with its own epoll set.
#pragma once

#include <sys/socket.h>

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
#include "frame_reader.hpp"

namespace daqx::pttcp {

struct Settings {
  bool throughput_mode = false;            // coalesce frames into large writes (else send each at once)
  std::size_t pack_bytes = 256 * 1024;     // throughput mode: write when this much is queued...
  std::chrono::microseconds pack_timeout{200};  // ...or when the oldest queued frame is this old
  bool connect_at_start = true;            // else on the first post
  int send_buffer = 0;                     // SO_SNDBUF, 0: kernel default
  int receive_buffer = 0;                  // SO_RCVBUF, 0: kernel default
  std::size_t send_queue = 4096;           // frames queued per connection before would_block
  std::size_t copy_threshold = 16 * 1024;  // received frames up to this size are copied from the staging buffer
  std::size_t staging_bytes = 256 * 1024;  // per incoming connection
  std::chrono::milliseconds reconnect_min{50};
  std::chrono::milliseconds reconnect_max{2000};
  std::uint32_t max_frame_size = kDefaultMaxFrameSize;

  static Settings from(const ParamSet& params, std::uint32_t max_frame_size);
};

std::vector<ParamSpec> parameter_specs();

class TcpTransport final : public Transport {
 public:
  explicit TcpTransport(TransportHost& host);
  ~TcpTransport() override;

  std::string_view protocol() const noexcept override { return "tcp"; }
  void listen(const EndpointAddress& local) override;
  PeerId connect(const EndpointAddress& remote) override;
  SendStatus post(PeerId peer, mem::Ref& frame) noexcept override;
  void open_connections() override;
  void stop() override;
  void report(MetricSink& sink) const override;
  std::vector<ConnectionInfo> connections() const override;

 private:
  using Counters = ConnectionCounters;

  struct Outgoing {
    enum class State { idle, connecting, up, down };
    PeerId id = 0;
    EndpointAddress remote;
    sockaddr_storage address{};
    socklen_t address_length = 0;
    std::mutex mutex;  // posting threads and the send thread; held for one queue update or one writev
    int fd = -1;
    State state = State::idle;
    bool ever_up = false;
    explicit Outgoing(std::size_t capacity) : queue(capacity) {}
    mem::RefRing queue;  // frames not yet written whole; the first may be partly written
    std::size_t head_written = 0;
    std::size_t queued_bytes = 0;
    bool output_armed = false;   // EPOLLOUT requested: the socket was full
    bool flush_pending = false;  // throughput mode: a timed flush is due
    std::chrono::steady_clock::time_point flush_due;
    std::chrono::steady_clock::time_point retry_at;
    std::chrono::milliseconds backoff{0};
    std::atomic<bool> want_ready{false};  // a poster got would_block: tell it when there is room
    Counters counters;
  };

  struct Incoming {
    PeerId id = 0;
    int fd = -1;
    std::string remote;
    std::unique_ptr<FrameReader> reader;
    Frame pending;             // a frame the executive could not take yet (busy)
    bool has_pending = false;
    bool paused = false;       // not reading: waiting for blocks or for the application to drain
    Counters counters;
  };

  // Send side (send thread, and posting threads under Outgoing::mutex).
  void send_loop(std::stop_token stop);
  void start_connect(Outgoing& c);  // under c.mutex
  void on_connected(Outgoing& c);   // under c.mutex
  void connection_lost(Outgoing& c, const std::string& reason, std::vector<PeerId>& went_down);  // under c.mutex
  // Whether the send thread reconnects a connection that is down: one that was up, every one with connectAt
  // start, and one that never came up (first use, peer not listening yet) while frames wait for it.
  bool retries(const Outgoing& c) const noexcept {
    return c.ever_up || settings_.connect_at_start || !c.queue.empty();
  }  // under c.mutex
  // Writes as much of the queue as the socket takes; false when the connection failed.
  bool flush(Outgoing& c, std::string& error);
  void arm_output(Outgoing& c, bool on);
  void wake_send_thread() noexcept;

  // Receive side (receive thread only).
  void receive_loop(std::stop_token stop);
  void accept_connections();
  void serve(Incoming& c);  // reads and delivers until the socket is drained or the connection pauses
  bool deliver(Incoming& c, Frame& frame);  // false: the connection must close
  enum class Ending { normal, truncated, bad };  // how an incoming connection ended, for the counters
  void close_incoming(Incoming& c, const std::string& reason, Ending ending);
  void resume_paused();
  void wake_receive_thread() noexcept;

  TransportHost& host_;
  Settings settings_;
  mem::Pool* receive_pool_ = nullptr;
  EndpointAddress local_;
  int listen_fd_ = -1;
  int send_epoll_ = -1;
  int receive_epoll_ = -1;
  int send_wake_ = -1;     // eventfd
  int receive_wake_ = -1;  // eventfd

  static constexpr std::size_t kMaxPeers = 4096;
  mutable std::mutex peers_mutex_;                // adding peers, and reading the lists for reports
  std::vector<std::unique_ptr<Outgoing>> outgoing_;  // reserved to kMaxPeers: post() reads without a lock
  std::atomic<std::size_t> outgoing_count_{0};
  std::list<Incoming> incoming_;                  // receive thread; peers_mutex_ for structural changes
  PeerId next_incoming_id_ = 1u << 20;            // incoming ids apart from outgoing ones in reports

  std::atomic<bool> resume_requested_{false};
  std::uint64_t retired_frames_received_ = 0;  // counters of closed incoming connections (peers_mutex_)
  std::uint64_t retired_bytes_received_ = 0;
  std::atomic<std::uint64_t> accepted_{0};
  std::atomic<std::uint64_t> bad_streams_{0};
  std::atomic<std::uint64_t> closed_by_peer_{0};
  std::atomic<std::uint64_t> truncated_frames_{0};
  std::atomic<std::uint64_t> receive_pool_waits_{0};
  std::atomic<std::uint64_t> delivery_waits_{0};
  std::jthread send_thread_;
  std::jthread receive_thread_;
  std::atomic<bool> stopped_{false};
};

}  // namespace daqx::pttcp
