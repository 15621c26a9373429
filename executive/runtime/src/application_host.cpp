// The hosted application: dispatch loop, direct hand-over between local applications, state machine.
#include "application_host.hpp"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
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

// How long the dispatch thread polls before it sleeps: short, because the machine has few cores.
constexpr int kIdleSpins = 64;
constexpr std::size_t kFramesPerRound = 64;
constexpr std::size_t kTaskCheckFrames = 8;        // frames between looks at waiting tasks
constexpr std::chrono::milliseconds kTaskWait{2};  // batches of tasks at most this far apart within a round

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
}

void ApplicationHost::finish() {
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
  std::lock_guard lock(pending_mutex_);
  pending_handlers_.emplace_back(function, std::move(handler));
  handlers_changed_.store(true, std::memory_order_release);
}

mem::Ref ApplicationHost::allocate_frame(std::size_t payload_bytes) noexcept {
  return pool_->allocate_chain(kFrameHeaderSize + payload_bytes);
}

SendStatus ApplicationHost::send(Tid target, std::uint16_t function, std::uint64_t transaction, mem::Ref& frame,
                                 std::uint8_t flags) noexcept {
  if (!frame || frame.size() < kFrameHeaderSize) {
    frame.reset();
    return SendStatus::error;
  }
  const Route* route = services_.routes.find(target);
  if (route == nullptr) return SendStatus::no_route;
  std::size_t total = frame.total_size();
  FrameHeader header;
  header.flags = flags | mode_flags_.load(std::memory_order_relaxed);
  header.total_length = static_cast<std::uint32_t>(total);
  header.target = target;
  header.initiator = config_.id;
  header.function = function;
  header.transaction = transaction;
  encode_header(header, frame.data());
  if (route->local != nullptr) return route->local->enqueue(header, frame, this);
  if (route->network != config_.network) return SendStatus::no_route;
  PeerId peer = route->remote->peer.load(std::memory_order_acquire);
  if (peer == kNoPeer && (peer = services_.routes.connection_to(*route->remote)) == kNoPeer) return SendStatus::no_route;
  Transport& transport = *route->remote->transport;
  SendStatus status = transport.post(peer, frame);
  if (status == SendStatus::would_block) {
    counters_.sends_would_block.add();
    wait_for_peer(&transport, peer);
    // Once more after registering: the queue may have drained (and said send_ready) before we registered.
    status = transport.post(peer, frame);
  }
  return status;
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
  return services_.threads.start(name_ + "/" + suffix, std::move(body));
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
  Frame frame{header, std::move(data)};
  if (!inbox_.try_push(frame)) {
    if (waiting_sender != nullptr) {
      waiting_sender->counters_.sends_would_block.add();
      {
        std::lock_guard lock(waiters_mutex_);
        if (std::find(waiting_senders_.begin(), waiting_senders_.end(), waiting_sender) == waiting_senders_.end())
          waiting_senders_.push_back(waiting_sender);
        has_waiters_.store(true, std::memory_order_seq_cst);
      }
      // Once more after registering: if the queue drained meanwhile, nobody would wake us.
      if (inbox_.try_push(frame)) {
        wake();
        return SendStatus::ok;
      }
    }
    data = std::move(frame.data);
    return SendStatus::would_block;
  }
  wake();
  return SendStatus::ok;
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
void ApplicationHost::run_overdue_tasks(std::size_t frames_this_round) {
  if (frames_this_round % kTaskCheckFrames != 0 || !has_tasks_.load(std::memory_order_relaxed)) return;
  const auto now = std::chrono::steady_clock::now();
  if (now - tasks_ran_ < kTaskWait) return;
  run_tasks();
}

void ApplicationHost::dispatch(Frame& frame) {
  std::uint16_t function = frame.header.function;
  if (function >= handlers_.size() || !handlers_[function]) {
    counters_.frames_unhandled.add();
    frame.data.reset();
    return;
  }
  counters_.frames_dispatched.add();
  try {
    handlers_[function](std::move(frame));
  } catch (const std::exception& e) {
    counters_.handler_exceptions.add();
    fail("handler for function " + std::to_string(function) + " threw: " + e.what());
  }
  frame.data.reset();  // in case the handler neither kept nor released it
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

bool ApplicationHost::try_dispatch_inline(Frame& frame) noexcept {
  if (!try_enter()) return false;  // busy: the caller queues the frame for the dispatch thread
  // Tasks posted before this frame came (a run's counters reset at enable, say) run before its handler, as
  // they would on the dispatch thread: while any wait, frames queue behind them.
  if (has_tasks_.load(std::memory_order_acquire)) {
    leave();
    return false;
  }
  apply_new_handlers();
  dispatch(frame);
  counters_.frames_dispatched_inline.add();
  leave();
  return true;
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
  Frame frame;
  while (!stop.stop_requested()) {
    // A receive thread may be running a handler inline: never long (the inline contract), so wait by yielding.
    if (!try_enter()) {
      std::this_thread::yield();
      continue;
    }
    apply_new_handlers();
    bool worked = run_tasks();
    std::size_t taken = 0;
    // The inbox (local applications) and each transport's lane in turn, a share of the round each.
    while (taken < kFramesPerRound && inbox_.try_pop(frame)) {
      dispatch(frame);
      ++taken;
      run_overdue_tasks(taken);
    }
    for (auto& lane : lanes_) {
      std::size_t from_lane = 0;
      while (from_lane < kFramesPerRound && lane->take(frame)) {
        dispatch(frame);
        ++from_lane;
        run_overdue_tasks(taken + from_lane);
      }
      taken += from_lane;
    }
    leave();
    worked = worked || taken > 0;
    if (has_waiters_.load(std::memory_order_seq_cst) && queues_half_empty()) release_waiters();
    if (worked) {
      idle = 0;
      continue;
    }
    if (++idle < kIdleSpins) {
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
