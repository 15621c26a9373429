// The hosted application: dispatch loop, direct hand-over between local applications, state machine.
#include "application_host.hpp"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <exception>
#include <stdexcept>

#include "daqx/services/text.hpp"

namespace daqx::detail {
namespace {

// Sleeping and waking the dispatch thread with a process-private futex: std::atomic::wait in libstdc++ 12
// takes the shared-futex path, whose key lookup (get_user_pages) cost a third of a receive thread's time.
void futex_wait(std::atomic<std::uint32_t>& word, std::uint32_t expected) noexcept {
  syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&word), FUTEX_WAIT_PRIVATE, expected, nullptr, nullptr, 0);
}
void futex_wake(std::atomic<std::uint32_t>& word) noexcept {
  syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&word), FUTEX_WAKE_PRIVATE, 1, nullptr, nullptr, 0);
}

// How long the dispatch thread polls before it sleeps: short, because the machine has few cores, and never
// past kIdleSpinTime: where more threads are runnable than there are cores (hundreds of executives on one
// host), a yield hands the core to another thread for its time slice, so 64 of them were 64 context switches
// and milliseconds per wake-up, for work that a sleeper is woken for anyway.
constexpr int kIdleSpins = 64;
constexpr std::chrono::microseconds kIdleSpinTime{50};
constexpr std::size_t kTaskCheckFrames = 8;        // frames between looks at waiting tasks
constexpr std::chrono::milliseconds kTaskWait{2};  // batches of tasks at most this far apart within a round

// Whether this thread may run a local target's handlers in place of queueing its frames: true on an
// application's worker threads (start_worker), which run no handlers of their own, and false while one of them
// runs handlers in place. So handlers never nest (what a handler sends locally is queued), and a worker that
// sends while holding its own application's lock never runs that application's handlers under it.
thread_local bool t_hands_over_in_place = false;

}  // namespace

std::string hierarchical_name(const std::string& class_name, std::uint32_t instance) {
  std::string name;
  for (std::size_t i = 0; i < class_name.size(); ++i) {
    if (class_name.compare(i, 2, "::") == 0) {
      name += '/';
      ++i;
    } else {
      name += static_cast<char>(std::tolower(static_cast<unsigned char>(class_name[i])));
    }
  }
  return name + "/" + std::to_string(instance);
}

mem::PoolConfig application_pool_config(const std::string& name) {
  // 256 B .. 1 MiB classes; 1 MiB chunks; up to 64 MiB per class. Larger frames are chained.
  return mem::PoolConfig::geometric(name + "/pool", 256, 1u << 20, 1u << 20, 64u << 20);
}

ApplicationHost::ApplicationHost(ContextServices& services, const config::ApplicationConfig& config,
                                 const ApplicationClass& cls, ParamSet params, std::size_t inbox_capacity,
                                 std::size_t lanes)
    : services_(services),
      config_(config),
      class_(cls),
      name_(hierarchical_name(config.class_name, config.instance)),
      params_(std::move(params)),
      inbox_(inbox_capacity) {
  for (std::size_t i = 0; i < lanes; ++i) lanes_.push_back(std::make_unique<DeliveryLane>(inbox_capacity));
  const std::string& dispatch = params_.text("dispatch");
  if (dispatch != "auto" && dispatch != "thread" && dispatch != "inline")
    throw std::invalid_argument("application " + std::to_string(config_.id) + ": dispatch is '" + dispatch +
                                "': expected auto, thread or inline");
  inline_ = dispatch == "inline" || (dispatch == "auto" && cls.handlers_may_run_inline);
  mem::Pool& pool = services_.pools.make(name_ + "/pool", application_pool_config(name_));
  pool_ = &pool;
  read_transport_mode();
  pool_->on_available([this] {
    if (pool_available_callback_) post_task(pool_available_callback_);
  });
}

ApplicationHost::~ApplicationHost() { finish(); }

void ApplicationHost::read_transport_mode() {
  const std::string& mode = params_.text("transportMode");
  if (mode != "endpoint" && mode != "latency" && mode != "throughput")
    throw std::invalid_argument("application " + std::to_string(config_.id) + ": transportMode is '" + mode +
                                "': expected endpoint, latency or throughput");
  mode_flags_.store(mode == "latency" ? frame_flags::send_now : mode == "throughput" ? frame_flags::coalesce : 0,
                    std::memory_order_relaxed);
}

void ApplicationHost::start() {
  application_ = class_.create(*this);
  dispatcher_ = services_.threads.start(name_ + "/dispatch", [this](std::stop_token stop) { dispatch_loop(stop); });
  takes_local_in_place_.store(inline_, std::memory_order_release);
}

void ApplicationHost::finish() {
  // No worker of another application hands frames over in place from now on: it checks after it has entered,
  // and one that entered before has left once we can enter.
  takes_local_in_place_.store(false, std::memory_order_release);
  while (!try_enter()) std::this_thread::yield();
  leave();
  if (dispatcher_.joinable()) {
    dispatcher_.request_stop();
    wake();
    dispatcher_.join();
  }
  Frame leftover;
  while (inbox_.try_pop(leftover)) leftover.data.reset();
  for (auto& lane : lanes_) {
    lane->publish();  // what a transport staged and did not publish yet (it has stopped by now)
    while (lane->take(leftover)) leftover.data.reset();
  }
  {
    std::lock_guard lock(tasks_mutex_);
    tasks_.clear();
  }
  application_.reset();
}

// ---- ApplicationContext -------------------------------------------------------------------------------

void ApplicationHost::bind(std::uint16_t function, FrameHandler handler) {
  bind_handler(function, Handler{std::move(handler), {}});
}

void ApplicationHost::bind_batch(std::uint16_t function, BatchHandler handler) {
  bind_handler(function, Handler{{}, std::move(handler)});
}

void ApplicationHost::bind_handler(std::uint16_t function, Handler handler) {
  if (function < batch_functions_.size())
    batch_functions_[function].store(static_cast<bool>(handler.batch), std::memory_order_relaxed);
  std::lock_guard lock(pending_mutex_);
  pending_handlers_.emplace_back(function, std::move(handler));
  handlers_changed_.store(true, std::memory_order_release);
}

mem::Ref ApplicationHost::allocate_frame(std::size_t payload_bytes) noexcept {
  return pool_->allocate_chain(kFrameHeaderSize + payload_bytes);
}

std::size_t ApplicationHost::allocate_frames(std::size_t payload_bytes, std::span<mem::Ref> frames) noexcept {
  const std::size_t bytes = kFrameHeaderSize + payload_bytes;
  // Frames of one block come from the pool in one visit (one look at this thread's cache); larger ones are
  // chains, made one by one.
  if (bytes <= pool_->max_block_size()) return pool_->allocate(bytes, frames);
  std::size_t made = 0;
  for (mem::Ref& frame : frames) {
    frame = pool_->allocate_chain(bytes);
    if (!frame) break;
    ++made;
  }
  return made;
}

FrameHeader ApplicationHost::write_header(Tid target, std::uint16_t function, std::uint64_t transaction, mem::Ref& frame,
                                          std::uint8_t flags) const noexcept {
  FrameHeader header;
  header.flags = flags | mode_flags_.load(std::memory_order_relaxed);
  header.total_length = static_cast<std::uint32_t>(frame.total_size());
  header.target = target;
  header.initiator = config_.id;
  header.function = function;
  header.transaction = transaction;
  encode_header(header, frame.data());
  return header;
}

SendStatus ApplicationHost::send(Tid target, std::uint16_t function, std::uint64_t transaction, mem::Ref& frame,
                                 std::uint8_t flags) noexcept {
  if (!frame || frame.size() < kFrameHeaderSize) {
    frame.reset();
    return SendStatus::error;
  }
  const Route* route = services_.routes.find(target);
  if (route == nullptr) return SendStatus::no_route;
  const FrameHeader header = write_header(target, function, transaction, frame, flags);
  SendStatus status = SendStatus::ok;
  deliver_run(*route, std::span<const FrameHeader>(&header, 1), std::span<mem::Ref>(&frame, 1), status);
  return status;
}

BatchSendResult ApplicationHost::send_batch(std::span<OutgoingFrame> frames) noexcept {
  BatchSendResult result;
  std::array<FrameHeader, kMaxBatchFrames> headers;
  std::array<mem::Ref, kMaxBatchFrames> run;
  while (result.sent < frames.size()) {
    // A run: consecutive frames to one target (at most kMaxBatchFrames), routed once and handed over at once.
    const std::size_t first = result.sent;
    const Tid target = frames[first].target;
    const Route* route = services_.routes.find(target);
    if (route == nullptr) {
      result.status = SendStatus::no_route;
      return result;
    }
    std::size_t n = 0;
    while (first + n < frames.size() && n < kMaxBatchFrames && frames[first + n].target == target) {
      OutgoingFrame& f = frames[first + n];
      if (!f.data || f.data.size() < kFrameHeaderSize) break;
      headers[n] = write_header(target, f.function, f.transaction, f.data, f.flags);
      run[n] = std::move(f.data);
      ++n;
    }
    if (n == 0) {  // a frame without room for its header, as send() says it
      frames[first].data.reset();
      result.status = SendStatus::error;
      return result;
    }
    SendStatus status = SendStatus::ok;
    const std::size_t taken = deliver_run(*route, std::span(headers).first(n), std::span(run).first(n), status);
    for (std::size_t i = taken; i < n; ++i) frames[first + i].data = std::move(run[i]);  // the caller's again
    result.sent += taken;
    if (taken < n) {
      result.status = status;
      return result;
    }
  }
  return result;
}

std::size_t ApplicationHost::deliver_run(const Route& route, std::span<const FrameHeader> headers,
                                         std::span<mem::Ref> frames, SendStatus& status) noexcept {
  if (route.local != nullptr) {
    const std::size_t taken = route.local->enqueue(headers, frames, this);
    if (taken < frames.size()) status = SendStatus::would_block;
    return taken;
  }
  PeerId peer = kNoPeer;
  if (route.network == config_.network) {
    peer = route.remote->peer.load(std::memory_order_acquire);
    if (peer == kNoPeer) peer = services_.routes.connection_to(*route.remote);
  }
  if (peer == kNoPeer) {
    status = SendStatus::no_route;
    return 0;
  }
  Transport& transport = *route.remote->transport;
  std::size_t taken = transport.post_batch(peer, frames, status);
  if (taken < frames.size() && status == SendStatus::would_block) {
    counters_.sends_would_block.add();
    wait_for_peer(&transport, peer);
    // Once more after registering: the queue may have drained (and said send_ready) before we registered.
    status = SendStatus::ok;
    taken += transport.post_batch(peer, frames.subspan(taken), status);
  }
  return taken;
}

void ApplicationHost::on_send_ready(std::function<void()> callback) { send_ready_callback_ = std::move(callback); }
void ApplicationHost::on_pool_available(std::function<void()> callback) {
  pool_available_callback_ = std::move(callback);
}

bool ApplicationHost::post_task(std::function<void()> fn) {
  {
    std::lock_guard lock(tasks_mutex_);
    tasks_.push_back(std::move(fn));
    has_tasks_.store(true, std::memory_order_release);
  }
  wake();
  return true;
}

std::jthread ApplicationHost::start_worker(const std::string& suffix, std::function<void(std::stop_token)> body) {
  return services_.threads.start(name_ + "/" + suffix, [body = std::move(body)](std::stop_token stop) {
    t_hands_over_in_place = true;
    body(stop);
  });
}

std::vector<ApplicationInfo> ApplicationHost::applications() const {
  std::vector<ApplicationInfo> list;
  for (const config::ContextConfig& c : services_.partition.contexts)
    for (const config::ApplicationConfig& a : c.applications)
      list.push_back(ApplicationInfo{a.id, a.class_name, a.instance, c.url, &c == &services_.context});
  return list;
}

std::optional<std::uint32_t> ApplicationHost::losses_allowed(const std::string& class_name) const {
  const config::LaunchExpendableRule* rule = services_.partition.launch.expendable_rule(class_name);
  return rule != nullptr ? std::optional<std::uint32_t>(rule->losses_allowed) : std::nullopt;
}

void ApplicationHost::fail(const std::string& reason) {
  {
    std::lock_guard lock(state_mutex_);
    state_ = State::failed;
    reason_ = reason;
  }
  daqx::log(LogLevel::error, name_, "failed: " + reason);
}

void ApplicationHost::set_condition(const std::string& condition) {
  std::lock_guard lock(state_mutex_);
  condition_ = condition;
}

void ApplicationHost::log(LogLevel level, const std::string& message) { daqx::log(level, name_, message); }

// ---- Executive side -----------------------------------------------------------------------------------

SendStatus ApplicationHost::enqueue(const FrameHeader& header, mem::Ref& data, ApplicationHost* waiting_sender) noexcept {
  return enqueue(std::span<const FrameHeader>(&header, 1), std::span<mem::Ref>(&data, 1), waiting_sender) == 1
             ? SendStatus::ok
             : SendStatus::would_block;
}

std::size_t ApplicationHost::enqueue(std::span<const FrameHeader> headers, std::span<mem::Ref> data,
                                     ApplicationHost* waiting_sender) noexcept {
  // The thread-local last: in a shared library its lookup is a call, and most targets do not take frames in place.
  if (waiting_sender != nullptr && takes_local_in_place_.load(std::memory_order_relaxed) && t_hands_over_in_place &&
      handle_in_place(headers, data))
    return data.size();
  // Frames go into the inbox a batch at a time (one exchange of its index for the lot); what does not fit goes
  // back to the caller's Refs.
  auto push_from = [&](std::size_t i) {
    if (data.size() - i == 1) {  // a single frame: no batch to build
      Frame frame{headers[i], std::move(data[i])};
      if (inbox_.try_push(frame)) return i + 1;
      data[i] = std::move(frame.data);
      return i;
    }
    std::array<Frame, 16> frames;  // built a piece at a time: a large array would cost its construction each call
    while (i < data.size()) {
      const std::size_t n = std::min(data.size() - i, frames.size());
      for (std::size_t j = 0; j < n; ++j) frames[j] = Frame{headers[i + j], std::move(data[i + j])};
      const std::size_t pushed = inbox_.try_push(std::span(frames).first(n));
      for (std::size_t j = pushed; j < n; ++j) data[i + j] = std::move(frames[j].data);
      i += pushed;
      if (pushed < n) break;
    }
    return i;
  };
  std::size_t taken = push_from(0);
  if (taken < data.size() && waiting_sender != nullptr) {
    waiting_sender->counters_.sends_would_block.add();
    {
      std::lock_guard lock(waiters_mutex_);
      if (std::find(waiting_senders_.begin(), waiting_senders_.end(), waiting_sender) == waiting_senders_.end())
        waiting_senders_.push_back(waiting_sender);
      has_waiters_.store(true, std::memory_order_seq_cst);
    }
    // Once more after registering: if the queue drained meanwhile, nobody would wake us.
    taken = push_from(taken);
  }
  if (taken > 0) wake();  // once for the whole run
  return taken;
}

void ApplicationHost::add_deliver_waiter(std::function<void()>* resume) {
  std::lock_guard lock(waiters_mutex_);
  if (std::find(waiting_deliveries_.begin(), waiting_deliveries_.end(), resume) == waiting_deliveries_.end())
    waiting_deliveries_.push_back(resume);
  has_waiters_.store(true, std::memory_order_seq_cst);
}

void ApplicationHost::notify_send_ready() noexcept {
  // Coalesce: one pending callback is enough however many peers got ready.
  if (send_ready_pending_.exchange(true, std::memory_order_acq_rel)) return;
  post_task([this] {
    send_ready_pending_.store(false, std::memory_order_release);
    if (send_ready_callback_) send_ready_callback_();
  });
}

void ApplicationHost::wait_for_peer(const void* transport, std::uint32_t peer) {
  std::lock_guard lock(peer_wait_mutex_);
  auto key = std::make_pair(transport, peer);
  if (std::find(waiting_peers_.begin(), waiting_peers_.end(), key) == waiting_peers_.end())
    waiting_peers_.push_back(key);
}

bool ApplicationHost::waiting_for_peer(const void* transport, std::uint32_t peer) noexcept {
  std::lock_guard lock(peer_wait_mutex_);
  auto found = std::find(waiting_peers_.begin(), waiting_peers_.end(), std::make_pair(transport, peer));
  if (found == waiting_peers_.end()) return false;
  waiting_peers_.erase(found);
  return true;
}

void ApplicationHost::wake() noexcept {
  // Pairs with the fence in dispatch_loop: either the dispatcher sees our work or we see it sleeping.
  // Only the producer that clears the flag makes the system call; the others see it cleared.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (sleeping_.load(std::memory_order_relaxed) && sleeping_.exchange(false, std::memory_order_acq_rel)) {
    wake_sequence_.fetch_add(1, std::memory_order_release);
    futex_wake(wake_sequence_);
  }
}

void ApplicationHost::release_waiters() {
  std::vector<ApplicationHost*> senders;
  std::vector<std::function<void()>*> deliveries;
  {
    std::lock_guard lock(waiters_mutex_);
    senders.swap(waiting_senders_);
    deliveries.swap(waiting_deliveries_);
    has_waiters_.store(false, std::memory_order_relaxed);
  }
  for (ApplicationHost* sender : senders) sender->notify_send_ready();
  for (std::function<void()>* resume : deliveries) (*resume)();
}

bool ApplicationHost::run_tasks() {
  if (!has_tasks_.load(std::memory_order_acquire)) return false;
  std::deque<std::function<void()>> batch;
  tasks_ran_ = std::chrono::steady_clock::now();
  {
    std::lock_guard lock(tasks_mutex_);
    batch.swap(tasks_);
    has_tasks_.store(false, std::memory_order_relaxed);
  }
  for (auto& task : batch) {
    try {
      task();
    } catch (const std::exception& e) {
      counters_.handler_exceptions.add();
      fail(std::string("task threw: ") + e.what());
    }
  }
  return !batch.empty();
}

// Tasks run once a round, before its frames: one batch for many frames while handlers are quick. A task posted
// while the round goes on (a timer's tick, the rest of a handler's work) waits for the frames behind it, and
// when each of those takes a while (a block's CRC on a slow machine) a round of them held an application's
// heartbeats back for seconds: so every few frames, waiting tasks run if the last batch ran kTaskWait ago.
void ApplicationHost::run_overdue_tasks() {
  if (!has_tasks_.load(std::memory_order_relaxed)) return;
  const auto now = std::chrono::steady_clock::now();
  if (now - tasks_ran_ < kTaskWait) return;
  run_tasks();
}

void ApplicationHost::dispatch(Frame& frame) { dispatch(std::span<Frame>(&frame, 1), false); }

void ApplicationHost::dispatch(std::span<Frame> frames, bool dispatch_thread) {
  std::size_t i = 0;
  std::size_t since_task_check = 0;
  while (i < frames.size()) {
    const std::uint16_t function = frames[i].header.function;
    const Handler* handler = function < handlers_.size() && handlers_[function] ? &handlers_[function] : nullptr;
    // A batch handler takes the run of frames for its function; any other frame goes alone.
    std::size_t n = 1;
    if (handler != nullptr && handler->batch)
      while (i + n < frames.size() && frames[i + n].header.function == function) ++n;
    std::span<Frame> run = frames.subspan(i, n);
    i += n;
    if (handler == nullptr) {
      counters_.frames_unhandled.add();
      run.front().data.reset();
      continue;
    }
    counters_.frames_dispatched.add(n);
    try {
      if (handler->batch) {
        counters_.batches_dispatched.add();
        handler->batch(run);
      } else {
        handler->single(std::move(run.front()));
      }
    } catch (const std::exception& e) {
      counters_.handler_exceptions.add();
      fail("handler for function " + std::to_string(function) + " threw: " + e.what());
    }
    for (Frame& frame : run) frame.data.reset();  // what the handler neither kept nor released
    since_task_check += n;
    if (dispatch_thread && since_task_check >= kTaskCheckFrames) {
      since_task_check = 0;
      run_overdue_tasks();
    }
  }
}

void ApplicationHost::apply_new_handlers() {
  if (!handlers_changed_.load(std::memory_order_acquire)) return;
  std::lock_guard lock(pending_mutex_);
  for (auto& [function, handler] : pending_handlers_) {
    if (function >= handlers_.size()) handlers_.resize(function + 1u);
    handlers_[function] = std::move(handler);
  }
  pending_handlers_.clear();
  handlers_changed_.store(false, std::memory_order_relaxed);
}

bool ApplicationHost::enter_inline() noexcept {
  if (!try_enter()) return false;  // busy: the caller queues the frames for whoever runs the handlers
  // Tasks posted before these frames came (a run's counters reset at enable, say) run before their handlers, as
  // they would on the dispatch thread: while any wait, frames queue behind them.
  if (has_tasks_.load(std::memory_order_acquire)) {
    leave();
    return false;
  }
  apply_new_handlers();
  return true;
}

bool ApplicationHost::try_dispatch_inline(Frame& frame) noexcept {
  if (!enter_inline()) return false;
  dispatch(frame);
  counters_.frames_dispatched_inline.add();
  leave();
  return true;
}

bool ApplicationHost::handle_in_place(std::span<const FrameHeader> headers, std::span<mem::Ref> data) noexcept {
  if (!enter_inline()) return false;
  // Never ahead of a frame queued before (ours among them: queued when we found the application busy, and still
  // there, or taken and not yet handled, which cannot be while we hold the right to run handlers), nor once
  // finish() has begun.
  if (!takes_local_in_place_.load(std::memory_order_acquire) || inbox_.size_approx() != 0) {
    leave();
    return false;
  }
  t_hands_over_in_place = false;  // what our handlers send locally is queued
  for (std::size_t i = 0; i < data.size();) {
    const std::size_t n = std::min(data.size() - i, taken_.size());
    for (std::size_t j = 0; j < n; ++j) taken_[j] = Frame{headers[i + j], std::move(data[i + j])};
    dispatch(std::span(taken_).first(n), false);
    i += n;
  }
  counters_.frames_dispatched_inline.add(data.size());
  t_hands_over_in_place = true;
  leave();
  return true;
}

bool ApplicationHost::dispatch_lane_inline(std::size_t binding) noexcept {
  if (!enter_inline()) return false;
  DeliveryLane& lane = *lanes_[binding];
  lane.publish();  // staged by this same thread: the consumer side (ours now) sees it once published
  std::size_t frames = 0;
  for (std::size_t taken; (taken = dispatch_from_lane(lane, false)) > 0;) frames += taken;
  counters_.frames_dispatched_inline.add(frames);
  leave();
  if (has_waiters_.load(std::memory_order_seq_cst) && queues_half_empty()) release_waiters();
  return true;
}

std::size_t ApplicationHost::dispatch_from_lane(DeliveryLane& lane, bool dispatch_thread) {
  const std::size_t taken = lane.take(std::span(taken_));
  if (taken > 0) dispatch(std::span(taken_).first(taken), dispatch_thread);
  return taken;
}

bool ApplicationHost::queues_empty() const noexcept {
  if (inbox_.size_approx() != 0) return false;
  for (const auto& lane : lanes_)
    if (lane->waiting() != 0) return false;
  return true;
}

bool ApplicationHost::queues_half_empty() const noexcept {
  if (inbox_.size_approx() > inbox_.capacity() / 2) return false;
  for (const auto& lane : lanes_)
    if (lane->waiting() > lane->capacity() / 2) return false;
  return true;
}

void ApplicationHost::dispatch_loop(std::stop_token stop) {
  int idle = 0;
  std::chrono::steady_clock::time_point idle_since;
  while (!stop.stop_requested()) {
    // A receive thread may be running a handler inline: never long (the inline contract), so wait by yielding.
    if (!try_enter()) {
      std::this_thread::yield();
      continue;
    }
    apply_new_handlers();
    bool worked = run_tasks();
    std::size_t taken = 0;
    // The inbox (local applications) and each transport's lane in turn, a share of the round each, taken in
    // batches (a batch handler gets each run of its frames in one call).
    {
      const std::size_t from_inbox = inbox_.try_pop(std::span(taken_));
      if (from_inbox > 0) dispatch(std::span(taken_).first(from_inbox), true);
      taken += from_inbox;
    }
    for (auto& lane : lanes_) taken += dispatch_from_lane(*lane, true);
    leave();
    worked = worked || taken > 0;
    if (has_waiters_.load(std::memory_order_seq_cst) && queues_half_empty()) release_waiters();
    if (worked) {
      idle = 0;
      continue;
    }
    const auto now = std::chrono::steady_clock::now();
    if (idle == 0) idle_since = now;
    if (++idle < kIdleSpins && now - idle_since < kIdleSpinTime) {
      std::this_thread::yield();
      continue;
    }
    // Sleep until a producer or a task wakes us; re-check after announcing it (see wake()).
    std::uint32_t observed = wake_sequence_.load(std::memory_order_acquire);
    sleeping_.store(true, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (queues_empty() && !has_tasks_.load(std::memory_order_relaxed) &&
        !handlers_changed_.load(std::memory_order_relaxed) && !stop.stop_requested())
      futex_wait(wake_sequence_, observed);
    sleeping_.store(false, std::memory_order_relaxed);
    idle = 0;
  }
}

// ---- State machine ------------------------------------------------------------------------------------

State ApplicationHost::state() const {
  std::lock_guard lock(state_mutex_);
  return state_;
}

TransitionResult ApplicationHost::run(Command command, std::uint64_t run) {
  TransitionResult result;
  State from = state();
  std::optional<State> to = next_state(from, command);
  if (!to) {
    result.http_status = 409;
    result.message = "application " + std::to_string(tid()) + " (" + class_name() + "): " +
                     illegal_transition_reason(from, command);
    result.states.emplace_back(tid(), from);
    return result;
  }
  if (command == Command::enable) run_.store(run, std::memory_order_release);
  try {
    switch (command) {
      case Command::configure:
        read_transport_mode();  // it may have been changed while Halted
        application_->configure();
        break;
      case Command::enable: application_->enable(); break;
      case Command::stop: application_->stop(); break;
      case Command::halt:
        if (from != State::halted) application_->halt();
        break;
    }
  } catch (const std::exception& e) {
    // The application refused (its configuration, a resource it could not get): the request was fine, the
    // application cannot do it, hence 422 and not a 500, which would say daqx itself is at fault. The reason is
    // the application's text: one printable line whatever it holds.
    const std::string reason = strings::printable(e.what());
    fail(std::string(to_string(command)) + " failed: " + reason);
    result.http_status = kApplicationRefusedStatus;
    result.message = "application " + std::to_string(tid()) + " (" + class_name() + "): " +
                     std::string(to_string(command)) + " failed: " + reason;
    result.states.emplace_back(tid(), State::failed);
    return result;
  }
  {
    std::lock_guard lock(state_mutex_);
    // A hook may have called fail(): that wins over the planned state.
    if (state_ != State::failed || command == Command::halt) {
      state_ = *to;
      if (*to == State::halted) {
        reason_.clear();
        condition_.clear();
      }
    }
    // Stop and halt end the run once their hooks are done with it; a failed enable never started one.
    if (state_ == State::configured || state_ == State::halted) run_.store(0, std::memory_order_release);
    result.ok = state_ != State::failed;
    if (!result.ok) {  // a hook called fail(): the application refused, as above
      result.http_status = kApplicationRefusedStatus;
      result.message = strings::printable(reason_);
    }
    result.states.emplace_back(tid(), state_);
  }
  return result;
}

ApplicationStatus ApplicationHost::status() const {
  ApplicationStatus s;
  s.tid = tid();
  s.class_name = class_name();
  s.instance = instance();
  s.name = name_;
  {
    std::lock_guard lock(state_mutex_);
    s.state = state_;
    s.reason = reason_.empty() ? condition_ : reason_;
  }
  s.run = run_number();
  for (const ParamSpec& spec : params_.specs())
    s.params.push_back(ParamView{spec.name, std::string(to_string(spec.type)), params_.text(spec.name),
                                 spec.default_value, spec.unit, spec.help});
  MetricSink sink;
  if (application_) application_->report(sink);
  counters_.report(sink);
  sink.setting("dispatch_inline", inline_ ? 1 : 0, "1 when frames from transports may be handled on the receive thread");
  std::size_t waiting = inbox_.size_approx();
  for (const auto& lane : lanes_) waiting += lane->waiting();
  sink.gauge("inbox_depth", static_cast<double>(waiting), "frames waiting for the dispatch thread");
  s.metrics = sink.metrics();
  return s;
}

}  // namespace daqx::detail
