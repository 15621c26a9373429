// evb::RU: allocations in, fragment blocks out, status to the EvM; everything on the dispatch thread.
#include "ru/ru.hpp"


#include "daqx/apps/text.hpp"

namespace daqx::evb {
using apps::concatenate;
using apps::to_text;

std::vector<ParamSpec> RU::parameters() { return ru_parameters(); }

RU::RU(ApplicationContext& context) : Application(context), outbox_(context), sender_(context, outbox_) {
  context.bind(function::allocate, [this](Frame&& f) { on_allocate(std::move(f)); });
  context.bind(function::control, [this](Frame&& f) { on_control(std::move(f)); });
  context.on_send_ready([this] {
    outbox_.flush();
    pump();
  });
  context.on_pool_available([this] { pump(); });
}

RU::~RU() { ticker_.stop(); }

void RU::configure() {
  const RuConfiguration c = read_ru_configuration(context().params(), context().tid());
  run_on_dispatch(context(), [this, c] {
    config_ = c;
    sender_.configure(config_.shape, config_.block_size);
  });
}

void RU::enable() {
  run_on_dispatch(context(), [this] {
    running_ = true;
    evm_loss_.reset();
    run_ = 0;
    incarnation_ = new_incarnation();
    last_status_ = {};
    outbox_.clear();
    sender_.start_run(0);
    sender_.reset_counters();
    outbox_.reset_counters();
    for (Counter* c : {&fragments_sent_, &bytes_sent_, &blocks_sent_, &allocations_, &events_dropped_, &bu_downs_,
                       &lost_connections_,
                       &stale_frames_, &malformed_, &pool_waits_, &would_blocks_, &send_errors_, &status_reports_,
                       &status_retries_})
      put(*c, 0);
    last_status_sent_.store(0, std::memory_order_relaxed);
    rate_.start(Clock::now(), sender_.fragments_sent(), sender_.bytes_sent());
    send_status();
  });
  ticker_.start(context(), seconds(std::min(0.01, config_.heartbeat_interval / 2)), [this] { tick(); });
}

void RU::stop() {
  ticker_.stop();
  run_on_dispatch(context(), [this] { end_run(); });
}

void RU::halt() {
  ticker_.stop();
  run_on_dispatch(context(), [this] { end_run(); });
}

void RU::end_run() {
  running_ = false;
  sender_.clear();
  outbox_.clear();
  put(events_queued_, 0);
  put(frames_waiting_, 0);
}

void RU::on_allocate(Frame&& frame) {
  if (!running_) return;
  std::optional<Allocate> message = decode_allocate(frame.payload(), frame.payload_size_in_head());
  if (!message || frame.header.initiator != config_.evm) {
    bump(malformed_);
    return;
  }
  evm_loss_.heard(Clock::now());
  if (message->run != run_) {
    bump(stale_frames_);  // from another run (we have not heard its heartbeat yet, or it is over)
    return;
  }
  bump(allocations_);
  for (const Assignment& a : message->assignments) sender_.add(a);
  pump();
}

void RU::on_control(Frame&& frame) {
  std::optional<Control> c = decode_control(frame.payload(), frame.payload_size_in_head());
  if (!c || frame.header.initiator != config_.evm) {
    bump(malformed_);
    return;
  }
  if (!running_) return;
  evm_loss_.heard(Clock::now());
  if (c->run != run_) {
    if (c->kind == ControlKind::end_of_run) return;  // the end of an earlier run
    run_ = c->run;  // a new run: whatever was queued belongs to the old one
    evm_loss_.set_run_ended(false);
    sender_.start_run(run_);
    outbox_.clear();
    put(run_published_, run_);
    send_status();
  }
  switch (c->kind) {
    case ControlKind::heartbeat:
    case ControlKind::reset:
      break;
    case ControlKind::bu_down:
      bump(bu_downs_);
      bump(events_dropped_, sender_.drop_bu(c->subject, c->generation));
      outbox_.drop(c->subject);
      pump();
      break;
    case ControlKind::ru_down:
      if (c->subject == context().tid()) {
        end_run();
        context().fail(concatenate({"the EvM declared this RU down: ", c->text}));
      }
      break;
    case ControlKind::end_of_run:
      evm_loss_.set_run_ended(true);
      break;
    case ControlKind::run_failed:
      end_run();
      context().fail(concatenate({"the run failed: ", c->text}));
      break;
  }
}

// Each pump is bounded (FragmentSender::pump) and posts the rest as a task; within a long dispatch round the
// executive runs waiting tasks every few frames once 2 ms have passed, so the ticker's status reports take turns
// with the filling. (Pumping straight from the handlers keeps an inline handler's sends on the receive thread,
// with no wake-up.)
void RU::schedule_pump() {
  if (!running_ || pump_posted_) return;
  pump_posted_ = true;
  context().post_task([this] {
    pump_posted_ = false;
    pump();
  });
}

void RU::pump() {
  if (!running_) return;
  if (sender_.pump() == FragmentSender::Progress::more) schedule_pump();
  report_lost_builders();
  put(fragments_sent_, sender_.fragments_sent());
  put(bytes_sent_, sender_.bytes_sent());
  put(blocks_sent_, sender_.blocks_sent());
  put(events_queued_, sender_.events_queued());
  put(frames_waiting_, outbox_.waiting());
  put(pool_waits_, sender_.pool_waits());
  put(would_blocks_, outbox_.would_blocks());
  put(send_errors_, outbox_.errors());
}

// Blocks to a BU were lost with the connection: the events they carried can never be built there. The EvM
// decides (it drops the BU if that generation is still current, and the BU is reset when it asks again);
// meanwhile this RU stops sending it that generation's work.
void RU::report_lost_builders() {
  for (Tid bu : outbox_.take_failed()) {
    if (bu == config_.evm) continue;  // status reports: the EvM's own silence handling covers it
    const std::uint32_t generation = sender_.generation_of(bu);
    if (generation == 0) continue;
    bump(events_dropped_, sender_.drop_bu(bu, generation + 1));
    outbox_.drop(bu);
    bump(lost_connections_);
    const Control c{ControlKind::bu_down, run_, generation, bu,
                    concatenate({"RU ", to_text(std::uint64_t{context().tid()}), " lost its connection to it"})};
    mem::Ref frame = control_frame(context(), c);
    if (!frame) continue;
    outbox_.send(config_.evm, function::control, run_, std::move(frame), frame_flags::send_now);
  }
}

// A status that cannot go now (no block, or the connection to the EvM is busy) is tried again at the next
// tick, not a whole heartbeatInterval later: the EvM declares an RU dead after ruTimeout without one, and an
// RU busy sending fragments must not look dead.
void RU::send_status() {
  mem::Ref frame = context().allocate_frame(64);
  const RuStatus status{run_, incarnation_, sender_.fragments_sent(), sender_.bytes_sent()};
  const std::optional<std::size_t> used = frame ? encode(status, frame.data() + kFrameHeaderSize, 64) : std::nullopt;
  if (used) frame.resize(kFrameHeaderSize + *used);
  if (!used || !outbox_.send_if_idle(config_.evm, function::ru_status, std::move(frame), frame_flags::send_now)) {
    bump(status_retries_);
    return;
  }
  last_status_ = Clock::now();
  bump(status_reports_);
  last_status_sent_.store(last_status_.time_since_epoch().count(), std::memory_order_relaxed);
}

void RU::tick() {
  if (!running_) return;
  const Clock::time_point now = Clock::now();
  if (std::optional<std::string> reason = evm_loss_.check(now, config_.evm, config_.evm_timeout)) {
    end_run();
    context().fail(*reason);
    return;
  }
  if (now - last_status_ >= seconds(config_.heartbeat_interval)) send_status();
  outbox_.flush();
  pump();
  rate_.update(now, sender_.fragments_sent(), sender_.bytes_sent());
}

void RU::report(MetricSink& sink) const {
  const apps::Rates rates = rate_.read(Clock::now());
  sink.counter("fragments_sent", read(fragments_sent_), "super-fragments sent (one per event)");
  sink.counter("bytes_sent", read(bytes_sent_), "super-fragment bytes sent");
  sink.counter("blocks_sent", read(blocks_sent_), "fragment blocks sent");
  sink.derived("fragment_rate", rates.frames_per_second, "super-fragments sent per second over the last second");
  sink.derived("byte_rate", rates.bytes_per_second, "super-fragment bytes sent per second over the last second");
  sink.gauge("fragments_in_flight", read(events_queued_), "events assigned and not yet completely sent");
  sink.gauge("blocks_waiting", read(frames_waiting_), "blocks waiting for a BU that cannot take them yet");
  sink.counter("allocations", read(allocations_), "allocate messages received from the EvM");
  sink.counter("events_dropped", read(events_dropped_), "events not sent because their BU was dropped");
  sink.counter("bu_downs", read(bu_downs_), "builder units the EvM dropped");
  sink.counter("lost_connections", read(lost_connections_), "sends to a BU that failed (connection lost), reported to the EvM");
  sink.counter("stale_frames", read(stale_frames_), "allocations of another run, ignored");
  sink.counter("malformed_frames", read(malformed_), "frames that did not decode or came from another than the EvM");
  sink.counter("pool_waits", read(pool_waits_), "times sending paused for free pool blocks (back-pressure)");
  sink.counter("sends_deferred", read(would_blocks_), "sends refused for lack of room, queued and sent later");
  sink.counter("send_errors", read(send_errors_), "frames (blocks or status reports) lost with their connection");
  sink.counter("status_reports", read(status_reports_), "status reports sent to the EvM");
  sink.counter("status_retries", read(status_retries_),
               "status reports that could not go at once (no block, or the connection to the EvM busy), tried again");
  const Clock::rep sent = last_status_sent_.load(std::memory_order_relaxed);
  sink.gauge("status_age_seconds", sent == 0 ? 0.0 : seconds_between(Clock::time_point(Clock::duration(sent)), Clock::now()),
             "seconds since the last status report went to the EvM (0: none yet); the EvM's ruTimeout applies to it");
  sink.gauge("run", read(run_published_), "the EvM's run number as last heard");
  const mem::PoolStats pool = context().pool().stats();
  sink.gauge("pool_blocks_used", static_cast<double>(pool.blocks_used()), "blocks of this unit's pool in use");
  sink.gauge("pool_reserved_bytes", static_cast<double>(pool.bytes_reserved), "bytes this unit's pool holds");
}

}  // namespace daqx::evb
