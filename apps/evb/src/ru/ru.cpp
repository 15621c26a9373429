// evb::ru::RU: allocations in, fragment blocks out, status to the EvM; everything on the dispatch thread.
#include "ru/ru.hpp"

namespace daqx::evb::ru {

std::vector<ParamSpec> RU::parameters() { return ru_parameters(); }

RU::RU(ApplicationContext& context)
    : Application(context),
      outbox_(context),
      builders_(context, config_, outbox_,
                [this](Tid bu, std::uint32_t generation) { evm_.report_lost_builder(bu, generation); }),
      evm_(context, config_, outbox_, builders_,
           EvmProxy::Unit{[this] { return builders_.running(); }, [this] { end_run(); }}) {
  context.on_send_ready([this] {
    outbox_.flush();
    builders_.pump();
  });
  context.on_pool_available([this] { builders_.pump(); });
}

RU::~RU() { ticker_.stop(); }

void RU::configure() {
  const RuConfiguration c = read_ru_configuration(context().params(), context().tid());
  run_on_dispatch(context(), [this, c] {
    config_ = c;
    source_ = readout::SyntheticSource(config_.shape, context().tid());
    builders_.configure(source_);
  });
}

void RU::enable() {
  run_on_dispatch(context(), [this] {
    evm_.start();
    builders_.start();
    rate_.start(Clock::now(), builders_.fragments_sent(), builders_.bytes_sent());
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

void RU::end_run() { builders_.stop(); }

void RU::tick() {
  if (!builders_.running()) return;
  const Clock::time_point now = Clock::now();
  if (!evm_.check_evm_alive(now)) return;
  evm_.send_status_if_due(now);
  outbox_.flush();
  builders_.pump();
  rate_.update(now, builders_.fragments_sent(), builders_.bytes_sent());
}

void RU::report(MetricSink& sink) const {
  const apps::Rates rates = rate_.read(Clock::now());
  const EvmProxy::Counters& evm = evm_.counters();
  const readout::FragmentPump::Counters& bu = builders_.sending();
  sink.counter("fragments_sent", read(bu.fragments_sent), "super-fragments sent (one per event)");
  sink.counter("bytes_sent", read(bu.bytes_sent), "super-fragment bytes sent");
  sink.counter("blocks_sent", read(bu.blocks_sent), "fragment blocks sent");
  sink.derived("fragment_rate", rates.frames_per_second, "super-fragments sent per second over the last second");
  sink.derived("byte_rate", rates.bytes_per_second, "super-fragment bytes sent per second over the last second");
  sink.gauge("fragments_in_flight", read(bu.events_queued), "events assigned and not yet completely sent");
  sink.gauge("blocks_waiting", read(bu.frames_waiting), "blocks waiting for a BU that cannot take them yet");
  sink.counter("allocations", read(evm.allocations), "allocate messages received from the EvM");
  sink.counter("events_dropped", read(bu.events_dropped), "events not sent because their BU was dropped");
  sink.counter("bu_downs", read(evm.bu_downs), "builder units the EvM dropped");
  sink.counter("lost_connections", read(builders_.lost_connections()), "sends to a BU that failed (connection lost), reported to the EvM");
  sink.counter("stale_frames", read(evm.stale_frames), "allocations of another run, ignored");
  sink.counter("malformed_frames", read(evm.malformed), "frames that did not decode or came from another than the EvM");
  sink.counter("pool_waits", read(bu.pool_waits), "times sending paused for free pool blocks (back-pressure)");
  sink.counter("sends_deferred", read(bu.would_blocks), "sends refused for lack of room, queued and sent later");
  sink.counter("send_errors", read(bu.send_errors), "frames (blocks or status reports) lost with their connection");
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

}  // namespace daqx::evb::ru
