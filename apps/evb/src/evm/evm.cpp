// evb::evm::EvM: assignment, liveness and draining, all on the dispatch thread (see dispatch.hpp).
#include "evm/evm.hpp"

#include <algorithm>
#include <stdexcept>

#include "daqx/apps/text.hpp"

namespace daqx::evb::evm {
using apps::concatenate;
using apps::to_text;

std::vector<ParamSpec> EvM::parameters() { return evm_parameters(); }

EvM::EvM(ApplicationContext& context) : Application(context), outbox_(context), trigger_pump_(context, outbox_) {
  run_counters_.drained.set(1);  // nothing assigned yet: a stop before any run has nothing to wait for
  context.bind(function::request, [this](Frame&& f) { on_request(std::move(f)); });
  context.bind(function::ru_status, [this](Frame&& f) { on_ru_status(std::move(f)); });
  context.bind(function::control, [this](Frame&& f) { on_unit_report(std::move(f)); });
  context.on_send_ready([this] {
    outbox_.flush();
    trigger_pump_.pump();
  });
  context.on_pool_available([this] { trigger_pump_.pump(); });
}

EvM::~EvM() { ticker_.stop(); }

void EvM::configure() {
  const EvmConfiguration c = read_evm_configuration(context().params(), context().tid());
  const UnitLossAllowance bu_allowance = read_unit_loss_allowance(context(), c.bus, "bus");
  const UnitLossAllowance ru_allowance = read_unit_loss_allowance(context(), c.rus, "rus");
  // The launcher would let such an RU's context die and go on; the EvM would end the run at its first RU down.
  if (ru_allowance.limited() && c.ru_failure == RuFailurePolicy::fail)
    throw std::runtime_error(concatenate({"the partition's <Expendable> rule lets ", to_text(std::uint64_t{ru_allowance.allowed()}),
                                          " ", ru_allowance.class_name(), " be lost, but ruFailurePolicy is fail: set it "
                                          "to incomplete, so that events are built without a lost RU"}));
  run_on_dispatch(context(), [this, c, bu_allowance, ru_allowance] {
    config_ = c;
    bu_allowance_ = bu_allowance;
    ru_allowance_ = ru_allowance;
    bu_drop_policy_ = BuDropPolicy(config_.bu_timeout);
    trigger_source_ = readout::SyntheticSource(config_.trigger, context().tid());
    trigger_pump_.configure(trigger_source_, config_.block_size, config_.blocks_per_send);
    bus_.clear();
    for (Tid t : config_.bus) bus_.emplace_back(t, context(), outbox_);
    rus_.clear();
    for (Tid t : config_.rus) rus_.emplace_back(t, context(), outbox_);
    bu_index_ = TidIndex(config_.bus);
    ru_index_ = TidIndex(config_.rus);
  });
}

void EvM::enable() {
  const std::uint32_t run = ++runs_;
  run_on_dispatch(context(), [this, run] { start_run(run); });
  const double period = config_.trigger_rate > 0 ? 0.001 : std::min(0.01, config_.heartbeat_interval / 2);
  ticker_.start(context(), seconds(period), [this] { tick(); });
}

void EvM::start_run(std::uint32_t run) {
  run_ = run;
  running_ = true;
  draining_ = false;
  failed_ = false;
  run_start_ = Clock::now();
  last_heartbeat_ = {};
  assigner_.start_run();
  batch_sizer_.start({config_.events_per_request, config_.batch_bytes, config_.min_events_per_request,
                      config_.max_events_per_request, superfragment_size(config_.trigger, 0)},
                     rus_.size());
  gauges_.events_per_request.set(batch_sizer_.events_per_batch());
  outbox_.clear();
  unsent_controls_.clear();
  trigger_pump_.start();
  trigger_pump_.start_run(run);
  allocations_.clear();
  ranking_.reset(bus_.size());
  bu_totals_.start(bus_.size());
  for (BuProxy& bu : bus_) {
    bu.start_run(run);
    note(bu);
  }
  for (RuProxy& ru : rus_) {
    ru.start_run();
    ru.publish();
  }
  rus_unknown_ = rus_.size();
  rus_taking_part_ = 0;
  rus_down_.clear();
  run_counters_.reset();
  event_rate_.start(run_start_, 0, 0);
  broadcast(Control{ControlKind::heartbeat, run_, 0, kNoTid, {}});
  publish();
}

// Stop: assign nothing more, let the BUs finish what they hold (or be dropped), then tell everyone the run
// ended, so nobody takes the EvM's silence for its death.
void EvM::stop() {
  run_on_dispatch(context(), [this] { draining_ = true; });
  const auto deadline = Clock::now() + seconds(config_.drain_timeout);
  while (run_counters_.drained.load() == 0 && Clock::now() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  ticker_.stop();
  run_on_dispatch(context(), [this] {
    std::uint64_t abandoned = 0;
    for (BuProxy& bu : bus_) {
      if (bu.events_in_flight() != 0)
        drop_builder(bu, concatenate({"still held ", to_text(bu.events_in_flight()), " events when the drain timed out"}));
      abandoned += bu.events_in_flight();
    }
    if (abandoned != 0)
      context().log(LogLevel::warning, concatenate({"stop: drain timed out, ", to_text(abandoned), " events lost"}));
    broadcast(Control{ControlKind::end_of_run, run_, 0, kNoTid, {}});
    running_ = false;
    trigger_pump_.stop();
    publish();
  });
}

void EvM::halt() {
  ticker_.stop();
  run_on_dispatch(context(), [this] {
    if (running_) broadcast(Control{ControlKind::end_of_run, run_, 0, kNoTid, {}});
    running_ = false;
    outbox_.clear();
    trigger_pump_.stop();
    publish();
  });
}

BuProxy* EvM::find_bu(Tid tid) {
  const std::size_t i = bu_index_.find(tid);
  return i == TidIndex::npos ? nullptr : &bus_[i];
}

RuProxy* EvM::find_ru(Tid tid) {
  const std::size_t i = ru_index_.find(tid);
  return i == TidIndex::npos ? nullptr : &rus_[i];
}

void EvM::note(BuProxy& bu) {
  const std::size_t i = index_of(bu);
  bu_totals_.note(i, bu);
  ranking_.rank(i, bu.has_credit() ? std::optional<std::uint16_t>(bu.priority()) : std::nullopt);
  bu.publish();
}

void EvM::note(RuProxy& ru, RuProxy::State before) {
  const RuProxy::State now = ru.state();
  if (before == now) return;
  if (before == RuProxy::State::unknown) --rus_unknown_;
  if (before == RuProxy::State::alive) --rus_taking_part_;
  if (now == RuProxy::State::unknown) ++rus_unknown_;
  if (now == RuProxy::State::alive) ++rus_taking_part_;
  if (now == RuProxy::State::down) rus_down_.push_back(static_cast<std::size_t>(&ru - rus_.data()));
  ru.publish();
}

void EvM::on_request(Frame&& frame) {
  if (!running_ || failed_) return;
  std::optional<Request> request = decode_request(frame.payload(), frame.payload_size_in_head());
  BuProxy* bu = find_bu(frame.header.initiator);
  if (!request || bu == nullptr) {
    gauges_.malformed_frames.add_single_writer();
    return;
  }
  frame.data.reset();
  const Clock::time_point now = Clock::now();
  run_counters_.requests.add_single_writer();
  // A BU of another generation or incarnation (new, dropped, or restarted): reset it and take nothing from it
  // until it answers with the generation the reset gave.
  const bool was_alive = bu->state() == BuProxy::State::alive;
  switch (bu_drop_policy_.admit(*bu, *request)) {
    case BuDropPolicy::Admission::current:
    case BuDropPolicy::Admission::taken_in:
      break;
    case BuDropPolicy::Admission::taken_in_again:
      run_counters_.bu_readmissions.add_single_writer();
      context().log(LogLevel::info, concatenate({"BU ", to_text(std::uint64_t{bu->tid()}), " taken in again (generation ",
                                                 to_text(std::uint64_t{bu->generation()}), ")"}));
      break;
    case BuDropPolicy::Admission::refused:
      if (was_alive) drop_builder(*bu, "it asked with another generation or restarted");
      if (failed_) return;
      run_counters_.stale_requests.add_single_writer();
      if (bu_drop_policy_.readmit(*bu, *request, now)) {
        send_to(*bu, bu->reset(run_), true);
        // A BU taken in (again, or restarted) must know which RUs are gone, or it waits for them forever.
        for (const std::size_t down : rus_down_)
          send_to(*bu, Control{ControlKind::ru_down, run_, 0, rus_[down].tid(), "down before this BU came in"}, true);
      }
      note(*bu);
      publish();
      return;
  }
  const BuProxy::Returned returned = bu->take_request(*request, now);
  note(*bu);
  run_counters_.events_completed.add_single_writer(returned.completed);
  run_counters_.events_incomplete.add_single_writer(returned.incomplete);
  run_counters_.events_corrupt.add_single_writer(returned.corrupt);
  run_counters_.unexpected_discards.add_single_writer(returned.unexpected);
  schedule_assign();  // after the other frames of this round: one Allocate for their requests
  publish();
}

void EvM::on_ru_status(Frame&& frame) {
  if (!running_ || failed_) return;
  std::optional<RuStatus> status = decode_ru_status(frame.payload(), frame.payload_size_in_head());
  RuProxy* ru = find_ru(frame.header.initiator);
  if (!status || ru == nullptr) {
    gauges_.malformed_frames.add_single_writer();
    return;
  }
  const Clock::time_point now = Clock::now();
  if (ru->state() == RuProxy::State::down) return;  // gone for this run: its events are built without it
  if (ru->state() == RuProxy::State::alive && status->incarnation != ru->incarnation()) {
    ru_down(*ru, "it restarted during the run (its buffered data is gone)");
    return;
  }
  if (ru->state() == RuProxy::State::unknown) {
    if (status->run != run_) {
      // It has not heard this run yet: the heartbeat we send tells it; wait for a status that names the run.
      send_to(*ru, Control{ControlKind::heartbeat, run_, 0, kNoTid, {}}, false);
      return;
    }
    ru->take_in(status->incarnation);
    note(*ru, RuProxy::State::unknown);
  }
  ru->heard(now);
  batch_sizer_.observe(static_cast<std::size_t>(ru - rus_.data()), status->fragments_sent, status->bytes_sent);
  gauges_.events_per_request.set(batch_sizer_.events_per_batch());
  assign();
}

// An RU lost its connection to a BU: the events of that BU's current generation cannot all be built.
void EvM::on_unit_report(Frame&& frame) {
  if (!running_ || failed_) return;
  std::optional<Control> c = decode_control(frame.payload(), frame.payload_size_in_head());
  if (!c || find_ru(frame.header.initiator) == nullptr || c->kind != ControlKind::bu_down) {
    gauges_.malformed_frames.add_single_writer();
    return;
  }
  BuProxy* bu = find_bu(c->subject);
  if (bu != nullptr && bu->state() == BuProxy::State::alive && bu->generation() == c->generation)
    drop_builder(*bu, c->text);
}

// Frames the EvM could not send: an RU that misses allocations leaves events unbuildable, so it is down;
// a BU that misses trigger fragments cannot build its events, so it is dropped.
void EvM::handle_failed_sends() {
  for (Tid target : outbox_.take_failed()) {
    if (BuProxy* bu = find_bu(target); bu != nullptr && bu->state() == BuProxy::State::alive) {
      drop_builder(*bu, "the EvM lost its connection to it");
      if (failed_) return;
    } else if (RuProxy* ru = find_ru(target); ru != nullptr && ru->state() == RuProxy::State::alive) {
      ru_down(*ru, "the EvM lost its connection to it (allocations could not be sent)");
      if (failed_) return;
    }
  }
}

// Requests that arrive together (one dispatch round) are served together: their assignments share one
// Allocate frame per RU instead of one each (a system call and a wake-up per RU per batch otherwise).
void EvM::schedule_assign() {
  if (assign_posted_) return;
  assign_posted_ = true;
  context().post_task([this] {
    assign_posted_ = false;
    assign();
  });
}

void EvM::assign() {
  if (!running_ || draining_ || failed_) return;
  const bool ready = rus_ready();
  gauges_.waiting_for_rus.set(ready ? 0 : 1);
  if (!ready) return;
  const Clock::time_point now = Clock::now();
  bool assigned = false;
  const EventAssigner::Limits limits{config_.max_events, config_.trigger_rate};
  const double into_run = seconds_between(run_start_, now);
  for (;;) {
    const std::uint64_t available = assigner_.events_available(limits, into_run);
    if (available == 0) break;
    // The highest priority among the BUs holding credits, round-robin among equals.
    const std::optional<std::size_t> chosen = ranking_.choose();
    if (!chosen) break;
    BuProxy* bu = &bus_[*chosen];
    const std::uint32_t batch = batch_sizer_.events_per_batch();
    const auto count = static_cast<std::uint32_t>(std::min<std::uint64_t>(batch, available));
    // A short batch because the trigger is slow waits for more until its oldest event has waited batchWait; one
    // cut by maxEvents goes now. The wait is the event's, not the credit's: at a low rate the BUs' credits have
    // all waited long, and timing the credit would send a batch of one event per round, each costing an
    // Allocate to every RU and a frame from every RU.
    const bool last_events = config_.max_events != 0 && assigner_.next_event() + count > config_.max_events;
    if (count < batch && !last_events && assigner_.oldest_waiting(limits, into_run) < config_.batch_wait) {
      ranking_.turn_again(*chosen);
      break;
    }
    const Assignment a = bu->assign_front_credit(count, assigner_.take(count));
    note(*bu);
    run_counters_.events_assigned.add_single_writer(count);
    allocations_.add(a);  // every RU is told it at the flush
    trigger_pump_.add(a);
    assigned = true;
  }
  if (assigned) {
    flush_allocations();
    trigger_pump_.pump();
  }
  handle_failed_sends();
}

// An Allocate frame (or a few) per RU that takes part, each from where it was told up to: one pass over the RUs
// per round of assignments, not per batch.
void EvM::flush_allocations() {
  if (allocations_.end() == 0) return;  // nothing assigned this run yet
  AllocationLog::Position oldest = allocations_.end();
  for (RuProxy& ru : rus_) {
    if (ru.told() == allocations_.end()) continue;
    ru.flush_allocations(run_, allocations_);
    if (ru.state() == RuProxy::State::alive) oldest = std::min(oldest, ru.told());
  }
  allocations_.release_before(oldest);
}

// Out of blocks (trigger fragments hold them): a heartbeat can be skipped, news of a unit cannot.
template <class Unit>
void EvM::send_to(const Unit& unit, const Control& control, bool queue) {
  if (!unit.send_control(run_, control, queue) && queue) unsent_controls_.emplace_back(unit.tid(), control);
}

void EvM::resend_unsent_controls() {
  std::vector<std::pair<Tid, Control>> unsent;
  unsent.swap(unsent_controls_);
  for (const auto& [target, control] : unsent) {
    if (const BuProxy* bu = find_bu(target)) send_to(*bu, control, true);
    else if (const RuProxy* ru = find_ru(target)) send_to(*ru, control, true);
  }
}

void EvM::broadcast(const Control& control) {
  const bool queue = control.kind != ControlKind::heartbeat;  // a heartbeat behind others is pointless
  for (const BuProxy& bu : bus_) send_to(bu, control, queue);
  for (const RuProxy& ru : rus_)
    if (ru.state() != RuProxy::State::down || control.kind != ControlKind::heartbeat) send_to(ru, control, queue);
}

void EvM::drop_builder(BuProxy& bu, const std::string& why) {
  const std::uint64_t lost = bu_drop_policy_.drop(bu, why);
  run_counters_.events_lost.add_single_writer(lost);
  run_counters_.bu_drops.add_single_writer();
  context().log(LogLevel::warning, BuDropPolicy::drop_message(bu, why, lost));
  // The RUs and the EvM's own sender forget its work; what waits in the outbox for it goes too.
  trigger_pump_.drop(bu.tid(), bu.generation());
  allocations_.forget_bu(bu.tid());
  for (RuProxy& ru : rus_) {
    ru.follow_forget(allocations_);
    if (ru.state() == RuProxy::State::alive)
      send_to(ru, Control{ControlKind::bu_down, run_, bu.generation(), bu.tid(), why}, true);
  }
  note(bu);
  publish();  // the gauges and the status agree with the drop from now on, not from the next tick
  // A drop at stop's drain timeout ends a run that is over anyway: only drops during the run count.
  if (failed_ || draining_) return;
  if (const std::optional<std::string> exceeded = bu_allowance_.exceeded(bu_totals_.out()))
    fail_run(bu.tid(), concatenate({*exceeded, ": ", BuDropPolicy::out_of_run(bus_)}));
}

void EvM::ru_down(RuProxy& ru, const std::string& why) {
  const RuProxy::State before = ru.state();
  ru.go_down();
  note(ru, before);
  run_counters_.ru_downs.add_single_writer();
  const RuDownVerdict verdict = ru_down_verdict(config_.ru_failure, ru, why);
  if (verdict.fail_run) {
    fail_run(ru.tid(), verdict.reason);
    return;
  }
  if (const std::optional<std::string> exceeded = ru_allowance_.exceeded(rus_down_.size())) {
    fail_run(ru.tid(), concatenate({*exceeded, "; the last: ", verdict.reason}));
    return;
  }
  publish();
  context().log(LogLevel::warning, verdict.log_line);
  broadcast(Control{ControlKind::ru_down, run_, 0, ru.tid(), verdict.reason});
}

void EvM::fail_run(Tid subject, const std::string& reason) {
  // Before Failed is visible: a failed EvM publishes no more, and must not go on counting a lost unit alive.
  publish();
  failed_ = true;
  broadcast(Control{ControlKind::run_failed, run_, 0, subject, reason});
  context().fail(reason);
}

void EvM::tick() {
  if (!running_ || failed_) return;
  const Clock::time_point now = Clock::now();
  // After a long gap between ticks the EvM itself was not running: the units' silence meanwhile is not theirs.
  if (now - last_tick_ > seconds(std::min(config_.bu_timeout, config_.ru_timeout) / 2)) {
    for (BuProxy& bu : bus_) bu.excuse_silence(now);
    for (RuProxy& ru : rus_) ru.excuse_silence(now);
  }
  last_tick_ = now;
  for (BuProxy& bu : bus_) {
    if (const std::optional<std::string> why = bu_drop_policy_.check_liveness(bu, now)) drop_builder(bu, *why);
    if (failed_) return;
  }
  for (RuProxy& ru : rus_) {
    if (const std::optional<std::string> why = ru_silence(ru, now, run_start_, config_.ru_timeout)) ru_down(ru, *why);
    if (failed_) return;
  }
  if (now - last_heartbeat_ >= seconds(config_.heartbeat_interval)) {
    last_heartbeat_ = now;
    broadcast(Control{ControlKind::heartbeat, run_, 0, kNoTid, {}});
  }
  resend_unsent_controls();
  outbox_.flush();
  assign();
  flush_allocations();
  trigger_pump_.pump();
  handle_failed_sends();
  publish();
}

// The totals kept as units change (each unit's own gauges are published when it changes): no pass over the units.
void EvM::publish() {
  const std::uint64_t in_flight = bu_totals_.events_in_flight();
  gauges_.credits_queued.set(bu_totals_.credits());
  run_counters_.events_in_flight.set(in_flight);
  gauges_.bus_alive.set(bu_totals_.alive());
  gauges_.rus_alive.set(rus_taking_part_);
  // No builder left: nothing can be assigned until one is taken in again. Said in the status reason (the run
  // is not over: a BU that returns is taken back), named with each BU's drop (written when it first holds).
  const bool none_left = running_ && !failed_ && bu_totals_.alive() == 0 && bu_totals_.dropped() != 0;
  if (none_left != (gauges_.no_builder_left.load() != 0)) {
    const std::optional<std::string> reason = none_left ? BuDropPolicy::no_builder_left(bus_) : std::nullopt;
    gauges_.no_builder_left.set(reason ? 1 : 0);
    context().set_condition(reason.value_or(std::string()));
  }
  // Drained: stopping and nothing out (dropped BUs' events are already counted lost).
  run_counters_.drained.set(draining_ && in_flight == 0 ? 1 : 0);
  event_rate_.update(Clock::now(), run_counters_.events_completed.load(), 0);
}

void EvM::report(MetricSink& sink) const {
  const apps::Rates rates = event_rate_.read(Clock::now());
  run_counters_.report(sink);
  gauges_.report(sink);
  sink.derived("event_rate", rates.frames_per_second, "events completed per second over the last second");
  sink.counter("trigger_bytes", static_cast<double>(trigger_pump_.counters().bytes_sent.load()), "trigger fragment bytes sent");
  sink.counter("sends_deferred", static_cast<double>(outbox_.would_blocks()), "sends refused for lack of room, queued and sent later");
  for (const BuProxy& bu : bus_) bu.report(sink);
  for (const RuProxy& ru : rus_) ru.report(sink);
}

}  // namespace daqx::evb::evm
