// The shared connection layer: outgoing state machine, queues, teardown, delivery, the two threads, stop
// and reports.
#include "daqx/pt/connection_transport.hpp"

#include <sys/prctl.h>

#include <algorithm>
#include <stdexcept>

namespace daqx::pt {
namespace {

using State = OutgoingConnection::State;
constexpr std::chrono::milliseconds kCheckInterval{100};  // the longest a thread sleeps without looking around
constexpr std::chrono::milliseconds kBriefSleep{1};       // when the wire cannot promise to wake it

}  // namespace

ConnectionTransport::ConnectionTransport(TransportHost& host, Describe describe)
    : host_(host),
      describe_(describe),
      settings_(ConnectionSettings::from(host.params(), host.max_frame_size())) {
  outgoing_.reserve(kMaxPeers);
  attention_asked_.reserve(kMaxPeers);
  attention_taken_.reserve(kMaxPeers);
  host_.on_deliver_ready([this] { request_resume(); });
}

ConnectionTransport::~ConnectionTransport() {
  // Normally the owner has stopped everything. Should it not have (a constructor that threw after starting
  // the threads), the threads at least must not outlive the object.
  join_threads();
}

void ConnectionTransport::join_threads() noexcept {
  for (std::jthread* thread : {&send_thread_, &receive_thread_}) {
    if (!thread->joinable()) continue;
    thread->request_stop();
    send_waiter_.wake();
    receive_waiter_.wake();
    thread->join();
  }
}

TransportCapabilities ConnectionTransport::capabilities() const {
  TransportCapabilities c = describe_(host_.params());
  refine_capabilities(c);
  return c;
}

void ConnectionTransport::start_threads() {
  send_thread_ = host_.start_thread("send", [this](std::stop_token stop) { send_loop(stop); });
  receive_thread_ = host_.start_thread("recv", [this](std::stop_token stop) { receive_loop(stop); });
}

// ---- outgoing connections -------------------------------------------------------------------------------

PeerId ConnectionTransport::connect(const EndpointAddress& remote) {
  std::unique_ptr<OutgoingConnection> connection = make_outgoing(remote);
  OutgoingConnection* c = connection.get();
  {
    std::lock_guard peers(peers_mutex_);
    if (outgoing_.size() >= kMaxPeers) throw std::runtime_error("more than " + std::to_string(kMaxPeers) + " peers");
    c->id = static_cast<PeerId>(outgoing_.size());
    c->remote = remote;
    outgoing_.push_back(std::move(connection));
    outgoing_count_.store(outgoing_.size(), std::memory_order_release);
  }
  if (settings_.connect_at_start) {
    std::lock_guard lock(c->mutex);
    c->connect_requested = true;
  }
  request_attention(*c);
  return c->id;
}

SendStatus ConnectionTransport::post(PeerId peer, mem::Ref& frame) noexcept {
  SendStatus status = SendStatus::ok;
  post_batch(peer, std::span<mem::Ref>(&frame, 1), status);
  return status;
}

std::size_t ConnectionTransport::post_batch(PeerId peer, std::span<mem::Ref> frames, SendStatus& status) noexcept {
  if (frames.empty()) return 0;
  if (stopped() || peer >= outgoing_count()) {
    status = SendStatus::no_route;
    return 0;
  }
  OutgoingConnection& c = *outgoing_[peer];
  bool attention = false;  // asked after the lock: the send thread opens it
  std::size_t taken = 0;
  {
    std::lock_guard lock(c.mutex);
    if (c.state == State::down && c.ever_up) {  // lost: the poster learns it now, the send thread reconnects
      c.counters.send_errors.add();
      frames.front().reset();
      status = SendStatus::error;
      return 0;
    }
    const bool never_up = c.state == State::idle || (c.state == State::down && !c.ever_up);
    if (never_up && !c.connect_requested && !settings_.connect_at_start) {  // first use, or after a failed first try
      c.connect_requested = true;
      attention = true;
    }
    for (mem::Ref& frame : frames) {
      if (c.queue.full()) {
        // What is queued goes on the wire first: the room this frame waits for comes from it.
        if (taken > 0 && c.state == State::up) pump(c);
        if (c.queue.full()) break;
      }
      // The application's transportMode (header flags) overrides the endpoint's mode, frame by frame.
      auto flags = static_cast<std::uint8_t>(frame.data()[frame_offset::flags]);
      const bool coalesce = (flags & frame_flags::coalesce) != 0 ||
                            (settings_.throughput_mode && (flags & frame_flags::send_now) == 0);
      if (!coalesce) c.flush_now = true;
      c.push(std::move(frame));
      ++taken;
    }
    if (taken < frames.size()) {
      c.want_ready.store(true, std::memory_order_relaxed);
      c.counters.sends_would_block.add();
      status = SendStatus::would_block;
    }
    if (taken > 0 && c.state == State::up) pump(c);
  }
  if (attention) request_attention(c);
  return taken;
}

void ConnectionTransport::open_connections() {
  const std::size_t peers = outgoing_count();
  for (std::size_t i = 0; i < peers; ++i) {
    OutgoingConnection& c = *outgoing_[i];
    std::lock_guard lock(c.mutex);
    // Not used yet: as the first frame would. Never up and refused (with first-use nothing retries it): again,
    // once its backoff has passed, so a later connect command reaches a peer that was not listening before.
    if (c.state == State::idle || (c.state == State::down && !c.ever_up)) c.connect_requested = true;
  }
  request_attention();
}

void ConnectionTransport::request_attention() noexcept {
  attention_all_.store(true, std::memory_order_relaxed);
  attention_.store(true, std::memory_order_release);
  send_waiter_.wake();
}

void ConnectionTransport::request_attention(OutgoingConnection& c) noexcept {
  // Once on the list until the send thread takes it: the list never holds more than kMaxPeers (reserved).
  if (!c.attention_asked.exchange(true, std::memory_order_acq_rel)) {
    std::lock_guard lock(attention_mutex_);
    attention_asked_.push_back(c.id);
  }
  attention_.store(true, std::memory_order_release);
  send_waiter_.wake();
}

bool ConnectionTransport::hold_for_packing(OutgoingConnection& c, std::size_t unsent_bytes,
                                           std::size_t pack_limit) noexcept {
  if (c.flush_now || unsent_bytes >= pack_limit) return false;
  if (!c.timer_armed) {
    c.arm_timer(Clock::now() + settings_.pack_timeout);
    request_attention(c);  // the send thread's next sleep ends at the timer
  }
  return true;
}

void ConnectionTransport::on_timer(OutgoingConnection& c) noexcept {
  c.flush_now = true;  // it has waited long enough: everything queued goes, whatever comes next
  if (c.state == State::up) pump(c);
}

void ConnectionTransport::connection_up(OutgoingConnection& c) {
  if (c.ever_up) c.counters.reconnects.add();
  c.ever_up = true;
  c.state = State::up;
  c.connect_requested = false;
  c.backoff = std::chrono::milliseconds(0);
  c.came_up = true;
  pump(c);  // frames queued while it was opening
}

void ConnectionTransport::teardown(OutgoingConnection& c, std::string reason) {
  const bool was_up = c.state == State::up;
  const std::size_t in_flight = close_link(c);
  const std::size_t lost = in_flight + c.queue.size();
  // A connection that never came up (peer not listening yet) is retried, not an error; a lost one is. Frames
  // on the wire or queued for either are lost with it, and counted; their blocks go back.
  if (was_up) c.counters.send_errors.add(1 + in_flight);
  c.counters.send_errors.add(c.queue.size());
  c.queue.clear();
  c.queued_bytes = 0;
  c.flush_now = false;
  c.timer_armed = false;
  c.failure.clear();
  c.state = State::down;
  c.backoff = std::clamp(c.backoff * 2, settings_.reconnect_min, settings_.reconnect_max);
  c.retry_at = Clock::now() + c.backoff;
  // Lost in a run, or with frames lost, it is worth a warning; a peer closing between runs or as the partition
  // shuts down (stop, halt, exit) is expected. One that never came up is only retried.
  const LogLevel level = !was_up ? LogLevel::debug
                         : host_.run_going() || lost > 0 ? LogLevel::warning
                                                         : LogLevel::info;
  std::string message = "connection to ";
  message.append(c.remote.text()).append(level == LogLevel::info ? " closed: " : " lost: ").append(reason);
  if (lost > 0) message.append(" (").append(std::to_string(lost)).append(" frames lost)");
  host_.log(level, message);
  if (was_up) {
    c.went_down = true;
    c.down_reason = std::move(reason);
  }
}

ConnectionTransport::Notices ConnectionTransport::collect_notices(OutgoingConnection& c) noexcept {
  Notices notices;
  notices.up = std::exchange(c.came_up, false);
  notices.down = std::exchange(c.went_down, false);
  if (notices.down) notices.reason = std::move(c.down_reason);
  c.down_reason.clear();
  if (c.want_ready.load(std::memory_order_relaxed) && c.queue.size() <= c.queue.capacity() / 2) {
    c.want_ready.store(false, std::memory_order_relaxed);
    notices.ready = true;
  }
  return notices;
}

void ConnectionTransport::emit_notices(const OutgoingConnection& c, const Notices& notices) {
  if (notices.down) host_.connection_changed(c.id, false, notices.reason);
  if (notices.up) host_.connection_changed(c.id, true, "connected to " + c.remote.text());
  if (notices.ready) host_.send_ready(c.id);
}

void ConnectionTransport::check_outgoing(Clock::time_point now, bool every_connection) {
  {
    std::lock_guard lock(attention_mutex_);
    attention_taken_.swap(attention_asked_);
  }
  for (const PeerId id : attention_taken_) {
    OutgoingConnection& c = *outgoing_[id];
    c.attention_asked.store(false, std::memory_order_release);  // asked again from here on: listed again
    look_at(c, now);
  }
  attention_taken_.clear();
  while (!due_.empty() && due_.top().first <= now) {
    const PeerId id = due_.top().second;
    due_.pop();
    look_at(*outgoing_[id], now);
  }
  if (!every_connection) return;
  const std::size_t peers = outgoing_count();
  for (std::size_t i = 0; i < peers; ++i) look_at(*outgoing_[i], now);
}

void ConnectionTransport::look_at(OutgoingConnection& c, Clock::time_point now) {
  if (c.scheduled <= now) c.scheduled = Clock::time_point::max();  // its entry in due_ is taken or stale
  with_lock(c, [&] {
    if (!c.failure.empty()) teardown(c, c.failure);
    const bool retry = c.state == State::down && retries(c) && now >= c.retry_at;
    if ((c.state == State::idle && c.connect_requested) || retry) {
      // Asked for and started: a first-use connection whose attempt fails is tried again only when asked again
      // (a frame, the connect command), not for ever.
      c.connect_requested = false;
      c.state = State::connecting;
      start_connect(c);
    }
    if (c.timer_armed && now >= c.timer_due) {
      c.timer_armed = false;
      on_timer(c);
    }
    if (c.state == State::up) pump(c);
    // What comes due later (a retry, the timer): the send thread looks at this connection again then, and
    // at no other for it.
    Clock::time_point due = Clock::time_point::max();
    if (c.state == State::down && retries(c)) due = c.retry_at;
    if (c.timer_armed) due = std::min(due, c.timer_due);
    if (due < c.scheduled) {
      c.scheduled = due;
      due_.emplace(due, c.id);
    }
  });
}

template <typename OnReady>
int ConnectionTransport::rest(Waiter& waiter, SleepCheck (ConnectionTransport::*last_look)(), Clock::time_point deadline,
                              Clock::time_point idle_since, PollWindow& window, OnReady& on_ready) {
  // Polling yields when it found nothing: with more polling threads than free cores (two executives pinned
  // to one CPU, or busy mode on a small node), the thread whose turn it is runs now instead of after this
  // one's time slice or poll period. Without it round trips grow to milliseconds in busy mode, and to twice
  // the poll period per hop when both ends share a CPU.
  const auto poll_once = [&] {
    const int ready = waiter.poll(on_ready);
    if (ready == 0) std::this_thread::yield();
    return ready;
  };
  if (busy_polling()) return poll_once();
  // Poll a little before sleeping, since what comes soon after work costs no wake-up then; with pollTime=auto
  // as long as this thread's sleeps show that work comes that soon (PollWindow).
  const bool adaptive = settings_.automatic_poll_time && host_.handlers_inline();
  const Clock::duration poll_time = !settings_.automatic_poll_time ? Clock::duration(settings_.poll_time)
                                    : adaptive                     ? Clock::duration(window.current())
                                                                   : Clock::duration::zero();
  const Clock::time_point now = Clock::now();
  if (now - idle_since < poll_time) return poll_once();
  const SleepCheck check = (this->*last_look)();
  if (check == SleepCheck::look_again) return 0;
  const Clock::time_point until = check == SleepCheck::sleep ? deadline : std::min(deadline, now + kBriefSleep);
  const int ready = waiter.wait_until(until, on_ready);
  if (adaptive) {
    // Woken before the deadline: by a descriptor, or by a wake-up (work handed over, which `ready` leaves out).
    const Clock::time_point woke = Clock::now();
    window.after_sleep(woke - now, ready > 0 || woke < until);
  }
  return ready;
}

namespace {

// The send thread's sleeps end at pack timers of a few hundred microseconds, which the kernel would let run
// late by the thread's timer slack (50 us by default): each hop of a throughput-mode ping-pong measured
// about 45 us over its packTimeout. One nanosecond makes the deadline the timer's word.
void keep_timers_exact() noexcept { prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL); }

}  // namespace

void ConnectionTransport::send_loop(std::stop_token stop) {
  keep_timers_exact();
  auto on_ready = [this](void* tag, std::uint32_t events) { on_send_ready(tag, events); };
  next_check_ = next_scan_ = Clock::now();
  Clock::time_point idle_since = next_check_;
  PollWindow window(kAutomaticPollTime);
  while (!stop.stop_requested()) {
    const bool worked = reap_send();
    const auto now = Clock::now();
    // The connections that asked, and those whose retry or timer is due; every one only when asked for all
    // (the connect command, a pool with room again) or every kCheckInterval, never per frame.
    const bool asked = attention_.exchange(false, std::memory_order_acq_rel);
    const bool every_connection = attention_all_.exchange(false, std::memory_order_relaxed) || now >= next_scan_;
    if (every_connection) next_scan_ = now + kCheckInterval;
    if (asked || every_connection || (!due_.empty() && due_.top().first <= now)) check_outgoing(now, every_connection);
    next_check_ = due_.empty() ? next_scan_ : std::min(next_scan_, due_.top().first);
    if (worked) {
      idle_since = now;
      continue;
    }
    // Descriptors that were ready are work too (a socket's events are handled in on_send_ready).
    if (rest(send_waiter_, &ConnectionTransport::ready_to_sleep_send, next_check_, idle_since, window, on_ready) > 0)
      idle_since = Clock::now();
  }
}

// ---- incoming connections -------------------------------------------------------------------------------

std::pair<std::size_t, std::string> ConnectionTransport::incoming_capacity() const {
  return {settings_.max_incoming, "maxIncoming (" + std::to_string(settings_.max_incoming) + ") are open"};
}

bool ConnectionTransport::over_incoming_limit(const std::string& remote) {
  const auto [capacity, limit] = incoming_capacity();
  if (incoming_open() < capacity) return false;
  events_.connections_over_limit.add();
  ++unlogged_over_limit_;
  const Clock::time_point now = Clock::now();
  if (now - last_limit_log_ >= std::chrono::seconds(1)) {
    host_.log(LogLevel::warning, "refused " + std::to_string(unlogged_over_limit_) +
                                     " incoming connection(s), the last from " + remote + ": " + limit);
    last_limit_log_ = now;
    unlogged_over_limit_ = 0;
  }
  return true;
}

IncomingConnection& ConnectionTransport::adopt(std::unique_ptr<IncomingConnection> connection) {
  std::lock_guard peers(peers_mutex_);
  connection->id = next_incoming_id_++;
  incoming_open_.fetch_add(1, std::memory_order_relaxed);
  incoming_.push_back(std::move(connection));
  return *incoming_.back();
}

void ConnectionTransport::incoming_up(IncomingConnection& c) {
  c.up = true;
  events_.connections_accepted.add();
  host_.connection_changed(c.id, true, "accepted from " + c.remote);
}

bool ConnectionTransport::deliver(IncomingConnection& c, Frame& frame) {
  const std::size_t bytes = frame.header.total_length;
  const Tid target = frame.header.target;
  switch (host_.deliver(std::move(frame), c.id)) {
    case DeliverStatus::accepted:
      // The receive thread is the only writer of a connection's receive counts.
      c.traffic.frames_received.add_single_writer();
      c.traffic.bytes_received.add_single_writer(bytes);
      return true;
    case DeliverStatus::busy:
      // The target's queue is full: hold the frame and stop taking more from this connection until the
      // executive has room (request_resume). Back-pressure reaches the sender through the wire.
      if (&frame != &c.pending) c.pending = std::move(frame);
      c.has_pending = true;
      c.paused = true;
      events_.delivery_waits.add();
      delivery_paused(c);
      return false;
    case DeliverStatus::rejected:
      close_incoming(c, "frame for application " + std::to_string(target) + ", which is not here", Ending::bad);
      return false;
  }
  return false;
}

void ConnectionTransport::close_incoming(IncomingConnection& c, const std::string& reason, Ending ending) {
  if (c.closed) return;
  const bool was_up = c.up;
  c.closed = true;
  c.up = false;
  incoming_open_.fetch_sub(1, std::memory_order_relaxed);
  close_wire(c);
  c.pending.data.reset();  // a frame waiting for delivery goes back to the pool
  c.has_pending = false;
  c.paused = false;
  closed_since_forget_ = true;
  {
    std::lock_guard peers(peers_mutex_);
    retired_traffic_ += c.traffic.snapshot();
  }
  switch (ending) {
    case Ending::bad:
      events_.bad_streams.add();
      host_.log(LogLevel::warning, "closed the connection from " + c.remote + ": " + reason);
      break;
    case Ending::truncated:
      events_.truncated_frames.add();
      host_.log(LogLevel::warning, "connection from " + c.remote + " ended in the middle of a frame: " + reason);
      break;
    case Ending::normal:
      events_.connections_closed_by_peer.add();
      host_.log(LogLevel::info, "connection from " + c.remote + " ended: " + reason);
      break;
  }
  if (was_up) host_.connection_changed(c.id, false, reason);
}

void ConnectionTransport::request_resume() noexcept {
  resume_requested_.store(true, std::memory_order_release);
  receive_waiter_.wake();
}

void ConnectionTransport::resume_incoming() {
  for (auto& connection : incoming_) {
    IncomingConnection& c = *connection;
    if (c.closed) continue;
    if (c.paused && c.has_pending) {
      c.has_pending = false;
      c.paused = false;
      if (!deliver(c, c.pending)) continue;  // still busy (paused again) or closed
    }
    if (!c.closed) resume_wire(c);
  }
}

void ConnectionTransport::forget_closed_incoming() {
  if (!closed_since_forget_) return;
  closed_since_forget_ = false;
  std::lock_guard peers(peers_mutex_);
  incoming_.remove_if([](const std::unique_ptr<IncomingConnection>& c) { return c->closed.load(); });
}

void ConnectionTransport::receive_loop(std::stop_token stop) {
  keep_timers_exact();  // its housekeeping deadlines (receive retries) likewise
  auto on_ready = [this](void* tag, std::uint32_t events) { on_receive_ready(tag, events); };
  Clock::time_point idle_since = Clock::now();
  PollWindow window(kAutomaticPollTime);
  while (!stop.stop_requested()) {
    const bool worked = reap_receive();
    // Pauses can also end without a wake-up having been seen (it raced with the pause): look every round.
    if (resume_requested_.exchange(false, std::memory_order_acq_rel)) resume_incoming();
    receive_housekeeping(Clock::now());
    // What this round delivered (and what the last wait's descriptors delivered) becomes visible to the
    // applications now, each woken at most once for the lot.
    host_.deliveries_done();
    receive_round_done();
    const auto now = Clock::now();
    if (worked) {
      idle_since = now;
      continue;
    }
    if (rest(receive_waiter_, &ConnectionTransport::ready_to_sleep_receive, now + kCheckInterval, idle_since, window,
             on_ready) > 0)
      idle_since = Clock::now();
  }
}

// ---- stop, registration, reports --------------------------------------------------------------------------

void ConnectionTransport::register_memory(std::unique_ptr<CountingRegistrar> registrar) {
  registrar_ = std::move(registrar);
  registration_slot_ = host_.register_memory(*registrar_);
}

void ConnectionTransport::close_everything() noexcept {
  std::lock_guard peers(peers_mutex_);
  for (auto& connection : outgoing_) {
    OutgoingConnection& c = *connection;
    std::lock_guard lock(c.mutex);
    close_link(c);
    c.queue.clear();  // every queued block goes back
    c.queued_bytes = 0;
    c.state = State::down;
  }
  for (auto& connection : incoming_) {
    IncomingConnection& c = *connection;
    if (c.closed) continue;
    c.closed = true;
    c.up = false;
    close_wire(c);
    c.pending.data.reset();
    c.has_pending = false;
  }
}

void ConnectionTransport::stop() {
  if (stopped_.exchange(true)) return;
  join_threads();
  close_everything();
  stop_endpoints();
  // Registrations belong to the device or domain: they go before it does.
  if (registration_slot_ != kNoRegistration) host_.deregister_memory(registration_slot_);
  registration_slot_ = kNoRegistration;
  stop_device();
}

void ConnectionTransport::report(MetricSink& sink) const {
  // The transport's totals: its connections' counts added up (closed incoming ones included), same names.
  CounterValues sent;
  CounterValues received;
  std::uint64_t incoming_connections = 0;
  {
    std::lock_guard peers(peers_mutex_);
    for (const auto& c : outgoing_) sent += c->counters.snapshot();
    received = retired_traffic_;
    for (const auto& c : incoming_) {
      if (c->closed) continue;  // their frames are in the retired totals
      received += c->traffic.snapshot();
      incoming_connections += 1;
    }
  }
  static const OutgoingCounters kSentNames;  // the sets' names, kinds and help for the sums
  static const IncomingTraffic kReceivedNames;
  kSentNames.report_values(sink, sent);
  kReceivedNames.report_values(sink, received);
  events_.report(sink);
  auto d = [](std::uint64_t v) { return static_cast<double>(v); };
  sink.gauge("incoming_connections", d(incoming_connections), "incoming connections open");
  const CountingRegistrar* r = registrar_.get();
  sink.counter("registrations", d(r ? r->registrations() : 0), "pool chunks registered with the device");
  sink.gauge("registered_bytes", d(r ? r->registered_bytes() : 0), "bytes of pool memory registered now");
  sink.counter("registration_seconds", r ? r->registration_seconds() : 0, "time spent registering memory");
  sink.counter("registration_failures", d(r ? r->failures() : 0), "chunks the device refused to register");
  sink.setting("memory_registration", r ? 1 : 0, "1 when pools are registered with the device");
  sink.setting("busy_poll", busy_polling() ? 1 : 0, "1 when the transport's threads busy-poll, 0 when they sleep on epoll");
  report_wire(sink);
}

std::vector<ConnectionInfo> ConnectionTransport::connections() const {
  std::vector<ConnectionInfo> list;
  std::lock_guard peers(peers_mutex_);
  for (const auto& connection : outgoing_) {
    const OutgoingConnection& c = *connection;
    ConnectionInfo info;
    info.peer = c.id;
    info.remote = c.remote.hostname + ":" + std::to_string(c.remote.port) + " (out)";
    info.outgoing = true;
    {
      std::lock_guard lock(c.mutex);
      info.up = c.state == State::up;
      info.metrics.push_back({"queued_frames", Metric::Kind::gauge, static_cast<double>(c.queue.size()), "frames waiting", {}});
      outgoing_metrics(c, info.metrics);
    }
    add_metrics(info.metrics, c.counters);
    list.push_back(std::move(info));
  }
  for (const auto& connection : incoming_) {
    const IncomingConnection& c = *connection;
    if (c.closed) continue;
    ConnectionInfo info;
    info.peer = c.id;
    info.remote = c.remote + " (in)";
    info.up = c.up;
    add_metrics(info.metrics, c.traffic);
    add_metrics(info.metrics, c.buffers);
    list.push_back(std::move(info));
  }
  return list;
}

}  // namespace daqx::pt
