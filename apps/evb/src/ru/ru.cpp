// evb::RU: allocations in, fragment blocks out, status to the EvM; everything on the dispatch thread.
#include "ru/ru.hpp"

namespace daqx::evb {

std::vector<ParamSpec> RU::parameters() { return ru_parameters(); }

RU::RU(ApplicationContext& context)
    : Application(context),
      outbox_(context),
      sender_(context, outbox_),
      evm_(context, config_, outbox_, sender_,
           EvmProxy::Unit{[this] { return running_; }, [this] { pump(); }, [this] { end_run(); }}) {
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
    evm_.start();
    outbox_.clear();
    sender_.start_run(0);
    sender_.reset_counters();
    outbox_.reset_counters();
    for (Counter* c : {&fragments_sent_, &bytes_sent_, &blocks_sent_, &pool_waits_, &would_blocks_, &send_errors_})
      put(*c, 0);
    rate_.start(Clock::now(), sender_.fragments_sent(), sender_.bytes_sent());
    evm_.send_status();
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
  evm_.report_lost_builders();
  put(fragments_sent_, sender_.fragments_sent());
  put(bytes_sent_, sender_.bytes_sent());
  put(blocks_sent_, sender_.blocks_sent());
  put(events_queued_, sender_.events_queued());
  put(frames_waiting_, outbox_.waiting());
  put(pool_waits_, sender_.pool_waits());
  put(would_blocks_, outbox_.would_blocks());
  put(send_errors_, outbox_.errors());
}

void RU::tick() {
  if (!running_) return;
  const Clock::time_point now = Clock::now();
  if (!evm_.check_evm_alive(now)) return;
  evm_.send_status_if_due(now);
  outbox_.flush();
  pump();
  rate_.update(now, sender_.fragments_sent(), sender_.bytes_sent());
}

void RU::report(MetricSink& sink) const {
  const apps::Rates rates = rate_.read(Clock::now());
  const EvmProxy::Counters& evm = evm_.counters();
  sink.counter("fragments_sent", read(fragments_sent_), "super-fragments sent (one per event)");
  sink.counter("bytes_sent", read(bytes_sent_), "super-fragment bytes sent");
  sink.counter("blocks_sent", read(blocks_sent_), "fragment blocks sent");
  sink.derived("fragment_rate", rates.frames_per_second, "super-fragments sent per second over the last second");
  sink.derived("byte_rate", rates.bytes_per_second, "super-fragment bytes sent per second over the last second");
  sink.gauge("fragments_in_flight", read(events_queued_), "events assigned and not yet completely sent");
  sink.gauge("blocks_waiting", read(frames_waiting_), "blocks waiting for a BU that cannot take them yet");
  sink.counter("allocations", read(evm.allocations), "allocate messages received from the EvM");
  sink.counter("events_dropped", read(evm.events_dropped), "events not sent because their BU was dropped");
  sink.counter("bu_downs", read(evm.bu_downs), "builder units the EvM dropped");
  sink.counter("lost_connections", read(evm.lost_connections), "sends to a BU that failed (connection lost), reported to the EvM");
  sink.counter("stale_frames", read(evm.stale_frames), "allocations of another run, ignored");
  sink.counter("malformed_frames", read(evm.malformed), "frames that did not decode or came from another than the EvM");
  sink.counter("pool_waits", read(pool_waits_), "times sending paused for free pool blocks (back-pressure)");
  sink.counter("sends_deferred", read(would_blocks_), "sends refused for lack of room, queued and sent later");
  sink.counter("send_errors", read(send_errors_), "frames (blocks or status reports) lost with their connection");
  sink.counter("status_reports", read(evm.status_reports), "status reports sent to the EvM");
  sink.counter("status_retries", read(evm.status_retries),
               "status reports that could not go at once (no block, or the connection to the EvM busy), tried again");
  const Clock::rep sent = evm.last_status_sent.load(std::memory_order_relaxed);
  sink.gauge("status_age_seconds", sent == 0 ? 0.0 : seconds_between(Clock::time_point(Clock::duration(sent)), Clock::now()),
             "seconds since the last status report went to the EvM (0: none yet); the EvM's ruTimeout applies to it");
  sink.gauge("run", read(evm.run), "the EvM's run number as last heard");
  const mem::PoolStats pool = context().pool().stats();
  sink.gauge("pool_blocks_used", static_cast<double>(pool.blocks_used()), "blocks of this unit's pool in use");
  sink.gauge("pool_reserved_bytes", static_cast<double>(pool.bytes_reserved), "bytes this unit's pool holds");
}

}  // namespace daqx::evb
