// The connection layer every peer transport shares, whatever its wire: outgoing connections with their
// state machine (connect at start or on first use, backoff and retry, the connect command), the queue of
// frames per connection, teardown that gives back every block a connection holds and counts what was lost,
// delivery of received frames with pause and resume, the two threads that serve it all and how they wait,
// memory registration, and one report with one set of counter names.
//
// A transport derives from it and keeps only what is its own: setting up its device, fabric or sockets,
// starting a connection and accepting one, putting frames on the wire, reaping completions, and its own
// parameters (docs/writing-a-transport.md).
//
// Threads. The send thread opens outgoing connections, retries them, fires their timers, tears down those
// that failed and serves what the transport's wire reports for them; posting threads (the applications')
// put frames on the wire themselves through pump() under the connection's mutex. The receive thread accepts
// incoming connections, reads them and delivers their frames. Each thread waits in its own Waiter.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <queue>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "daqx/api/transport.hpp"
#include "daqx/pt/connection_settings.hpp"
#include "daqx/pt/counting_registrar.hpp"
#include "daqx/pt/incoming_connection.hpp"
#include "daqx/pt/outgoing_connection.hpp"
#include "daqx/pt/poll_window.hpp"
#include "daqx/pt/transport_counters.hpp"
#include "daqx/pt/waiter.hpp"

namespace daqx::pt {

class ConnectionTransport : public Transport {
 public:
  using Clock = std::chrono::steady_clock;
  // Outgoing peers per transport; post() reads the table without a lock, so it never grows past this.
  static constexpr std::size_t kMaxPeers = 4096;

  // Whoever owns a transport calls stop() before destroying it (the executive does): stopping calls the
  // transport's own hooks, which a base destructor cannot.
  ~ConnectionTransport() override;

  std::string_view protocol() const noexcept final { return host_.protocol(); }
  TransportCapabilities capabilities() const final;
  PeerId connect(const EndpointAddress& remote) final;
  SendStatus post(PeerId peer, mem::Ref& frame) noexcept final;
  // A batch under one hold of the connection's lock, and one push to the wire for all of it.
  std::size_t post_batch(PeerId peer, std::span<mem::Ref> frames, SendStatus& stopped) noexcept final;
  void open_connections() final;
  void stop() final;
  void report(MetricSink& sink) const final;
  std::vector<ConnectionInfo> connections() const final;

 protected:
  // describe: what a transport with these parameters offers (the module's TransportClass::capabilities).
  // The shared parameters are read from host.params().
  using Describe = TransportCapabilities (*)(const ParamSet&);
  ConnectionTransport(TransportHost& host, Describe describe);

  TransportHost& host() const noexcept { return host_; }
  const ConnectionSettings& connection_settings() const noexcept { return settings_; }
  bool busy_polling() const noexcept { return settings_.wait_mode == WaitMode::busy; }
  bool stopped() const noexcept { return stopped_.load(std::memory_order_relaxed); }
  TransportEvents& events() noexcept { return events_; }

  // Starts the send and receive threads; call once the wire can serve them (descriptors added).
  void start_threads();
  Waiter& send_waiter() noexcept { return send_waiter_; }
  Waiter& receive_waiter() noexcept { return receive_waiter_; }


  // ---- Outgoing connections: the wire's part ----------------------------------------------------------
  // The record of a connection to remote, its address resolved (no wire yet); may throw with the reason.
  virtual std::unique_ptr<OutgoingConnection> make_outgoing(const EndpointAddress& remote) = 0;
  // Send thread, under c.mutex: starts opening the wire connection (state is set to connecting first).
  // Calls connection_up() when it is up, or teardown() when it failed, now or later.
  virtual void start_connect(OutgoingConnection& c) = 0;
  // Under c.mutex, on a posting thread or the send thread: puts queued frames on the wire as far as the
  // wire allows now. A failure is not torn down here: set c.failure and call request_attention(c).
  virtual void pump(OutgoingConnection& c) noexcept = 0;
  // Under c.mutex: closes the wire connection (after this the wire touches none of its blocks), releases
  // the frames that were on it, and returns how many of those were not known to be sent.
  virtual std::size_t close_link(OutgoingConnection& c) noexcept = 0;
  // Send thread, under c.mutex: the connection's timer (OutgoingConnection::arm_timer) has expired. By default
  // it is the pack timer: what is queued goes now.
  virtual void on_timer(OutgoingConnection& c) noexcept;
  // Under c.mutex: metrics of this connection beyond the shared ones (the page's connection table).
  virtual void outgoing_metrics(const OutgoingConnection&, std::vector<Metric>&) const {}

  // Helpers for the wire, under c.mutex.
  void connection_up(OutgoingConnection& c);
  // Closes the wire connection, loses what was queued or in flight (counted in send_errors), backs off.
  void teardown(OutgoingConnection& c, std::string reason);  // by value: it may be c.failure, cleared here
  // From any thread: the send thread looks at every outgoing connection soon (connects, failures, timers).
  void request_attention() noexcept;
  // From any thread, under c.mutex or not: the send thread looks at this connection soon (its failure, its
  // timer, a first connect, a post the wire could not take), and at no other for it.
  void request_attention(OutgoingConnection& c) noexcept;
  // For pump(), under c.mutex: whether what is queued and not yet sent (unsent_bytes) waits a little longer to
  // go together with more (throughput mode, until pack_limit bytes or the pack timer, which this arms). False
  // when it goes now: a frame that must not wait is queued, enough is queued, or the timer fired.
  bool hold_for_packing(OutgoingConnection& c, std::size_t unsent_bytes, std::size_t pack_limit) noexcept;
  // Runs f under c's lock, then tells the executive what changed: up, down, room in the queue again.
  template <typename F>
  void with_lock(OutgoingConnection& c, F&& f) {
    Notices notices;
    {
      std::lock_guard lock(c.mutex);
      f();
      notices = collect_notices(c);
    }
    emit_notices(c, notices);
  }
  OutgoingConnection& outgoing(PeerId id) noexcept { return *outgoing_[id]; }
  std::size_t outgoing_count() const noexcept { return outgoing_count_.load(std::memory_order_acquire); }

  // ---- Incoming connections: the shared part, receive thread --------------------------------------------
  // Whether a connection arriving from `remote` must be refused because maxIncoming are open: then it is
  // counted (connections_over_limit) and logged at most once a second, and the transport refuses it before it
  // makes anything for it.
  bool over_incoming_limit(const std::string& remote);
  // The incoming connections this transport serves at once, and what sets that number (maxIncoming, or a
  // transport's own limit such as its receive budget), for the refusal's log line.
  virtual std::pair<std::size_t, std::string> incoming_capacity() const;
  // Incoming connections open now (receive thread).
  std::size_t incoming_open() const noexcept { return incoming_open_.load(std::memory_order_relaxed); }
  // Takes in a connection accepted from a peer (not up yet) and gives it its id.
  IncomingConnection& adopt(std::unique_ptr<IncomingConnection> connection);
  // The connection is up: counted, and the executive told.
  void incoming_up(IncomingConnection& c);
  // Hands a complete frame to the executive. False when it could not: the connection paused (the target is
  // busy; the frame is kept and delivered on resume) or was closed (the target is not here).
  bool deliver(IncomingConnection& c, Frame& frame);
  // Closes the connection once: the wire's part (close_wire), then the frame held for delivery; counted by
  // how it ended, logged, and the executive told.
  void close_incoming(IncomingConnection& c, const std::string& reason, Ending ending);
  // From any thread: the receive thread resumes paused connections soon (pool blocks or room again).
  void request_resume() noexcept;
  // Receive thread: drops closed connections from the list, when no completion can name them any more.
  void forget_closed_incoming();
  // Receive thread: every connection not closed.
  template <typename F>
  void for_each_incoming(F&& f) {
    for (auto& connection : incoming_)
      if (!connection->closed) f(*connection);
  }
  // Receive thread: after close_incoming() the wire writes into none of c's blocks; release what it holds.
  virtual void close_wire(IncomingConnection& c) noexcept = 0;
  // Receive thread: delivery paused (stop reading) and resumed (the held frame went, or the pool has
  // blocks again: read on).
  virtual void delivery_paused(IncomingConnection&) {}
  virtual void resume_wire(IncomingConnection&) {}

  // ---- The threads' work -------------------------------------------------------------------------------
  // Completions and connection events; true when there was any (the thread looks again before sleeping).
  virtual bool reap_send() { return false; }
  virtual bool reap_receive() { return false; }
  // A descriptor the wire added to send_waiter() or receive_waiter() is ready.
  virtual void on_send_ready(void* /*tag*/, std::uint32_t /*events*/) {}
  virtual void on_receive_ready(void* /*tag*/, std::uint32_t /*events*/) {}
  // Last look before sleeping (e.g. arming a completion queue, or asking the provider whether its
  // descriptors tell everything).
  enum class SleepCheck {
    look_again,     // something may have come in: go round once more
    sleep,          // the descriptors will wake the thread
    sleep_briefly   // they may not: sleep at most a millisecond
  };
  virtual SleepCheck ready_to_sleep_send() { return SleepCheck::sleep; }
  virtual SleepCheck ready_to_sleep_receive() { return SleepCheck::sleep; }
  // Receive thread, once per round (device events, forgetting closed connections).
  virtual void receive_housekeeping(Clock::time_point /*now*/) {}
  // The end of a receive round, after the host was told deliveries_done (handlers run inline have run): what the
  // wire batches per round (ptshm's block returns) goes out here. Receive thread.
  virtual void receive_round_done() noexcept {}

  // ---- Stopping ----------------------------------------------------------------------------------------
  // After every connection is closed: listeners, shared receive queues and what is posted to them.
  virtual void stop_endpoints() noexcept {}
  // After memory is deregistered: completion queues, domains, devices.
  virtual void stop_device() noexcept {}

  // ---- Memory registration -----------------------------------------------------------------------------
  // Registers every pool of the executive, now and later, with the device; kept and counted here.
  void register_memory(std::unique_ptr<CountingRegistrar> registrar);
  std::size_t registration_slot() const noexcept { return registration_slot_; }

  // ---- Reports -----------------------------------------------------------------------------------------
  virtual void report_wire(MetricSink&) const {}
  // What describe() said, corrected by what the opened device or provider really allows.
  virtual void refine_capabilities(TransportCapabilities&) const {}

 private:
  void send_loop(std::stop_token stop);
  void receive_loop(std::stop_token stop);
  // A round found nothing to do: poll once (busy polling, or within pollTime of the last work: the thread's
  // `window` with pollTime=auto), or sleep until deadline after the wire's last look.
  // Returns how many of the waiter's descriptors were ready.
  template <typename OnReady>
  int rest(Waiter& waiter, SleepCheck (ConnectionTransport::*last_look)(), Clock::time_point deadline,
           Clock::time_point idle_since, PollWindow& window, OnReady& on_ready);
  // The connections that asked for attention or whose retry or timer is due; all of them if every_connection.
  void check_outgoing(Clock::time_point now, bool every_connection);
  // One connection: tears it down if it failed, opens it, fires its timer, pumps it, and schedules the next
  // look (retry, timer) in due_.
  void look_at(OutgoingConnection& c, Clock::time_point now);
  void resume_incoming();
  // Whether the send thread reconnects a connection that is down: one that was up, every one with connectAt
  // start, one asked for by the connect command, and one that never came up while frames wait for it.
  bool retries(const OutgoingConnection& c) const noexcept {
    return c.ever_up || settings_.connect_at_start || c.connect_requested || !c.queue.empty();
  }
  // What changed on a connection, taken under its lock and told to the executive after it.
  struct Notices {
    bool up = false;
    bool down = false;
    bool ready = false;
    std::string reason;
  };
  Notices collect_notices(OutgoingConnection& c) noexcept;
  void emit_notices(const OutgoingConnection& c, const Notices& notices);
  void close_everything() noexcept;
  void join_threads() noexcept;

  TransportHost& host_;
  Describe describe_;
  ConnectionSettings settings_;
  Waiter send_waiter_;
  Waiter receive_waiter_;

  mutable std::mutex peers_mutex_;                            // adding peers, and reading the lists for reports
  std::vector<std::unique_ptr<OutgoingConnection>> outgoing_;  // reserved to kMaxPeers: post() reads without a lock
  std::atomic<std::size_t> outgoing_count_{0};
  std::list<std::unique_ptr<IncomingConnection>> incoming_;   // receive thread; peers_mutex_ for structural changes
  PeerId next_incoming_id_ = 1u << 20;                        // incoming ids apart from outgoing ones in reports
  bool closed_since_forget_ = false;                          // receive thread: forget_closed_incoming has work
  CounterValues retired_traffic_;  // of closed incoming connections (peers_mutex_)
  Clock::time_point last_limit_log_{};     // receive thread: refusals past maxIncoming, logged once a second
  std::uint64_t unlogged_over_limit_ = 0;  // receive thread
  std::atomic<std::size_t> incoming_open_{0};  // adopted and not closed (counted by the receive thread)

  std::atomic<bool> attention_{false};      // the send thread has something to look at
  std::atomic<bool> attention_all_{false};  // ... at every outgoing connection
  std::mutex attention_mutex_;              // after a connection's mutex, never before
  std::vector<PeerId> attention_asked_;     // connections that asked (once each, attention_mutex_)
  std::vector<PeerId> attention_taken_;     // send thread: the ones it is looking at
  using Due = std::pair<Clock::time_point, PeerId>;
  std::priority_queue<Due, std::vector<Due>, std::greater<>> due_;  // send thread: retries and timers to come
  std::atomic<bool> resume_requested_{false};
  Clock::time_point next_check_{};  // send thread: its next look, the earliest of next_scan_ and due_
  Clock::time_point next_scan_{};   // send thread: its next look at every connection
  TransportEvents events_;

  std::unique_ptr<CountingRegistrar> registrar_;
  std::size_t registration_slot_ = kNoRegistration;

  std::jthread send_thread_;
  std::jthread receive_thread_;
  std::atomic<bool> stopped_{false};
};

}  // namespace daqx::pt
