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
  ticker_.start(context(), seconds(std::min(kMaxTickPeriod, config_.heartbeat_interval / 2)), [this] { tick(); });
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
  builders_.sending().report(sink);
  builders_.counters().report(sink);
  evm_.counters().report(sink);
  evm_.gauges().report(sink);
  sink.derived("fragment_rate", rates.frames_per_second, "super-fragments sent per second over the last second");
  sink.derived("byte_rate", rates.bytes_per_second, "super-fragment bytes sent per second over the last second");
  const Clock::rep sent = evm_.last_status_sent();
  sink.gauge("status_age_seconds", sent == 0 ? 0.0 : seconds_between(Clock::time_point(Clock::duration(sent)), Clock::now()),
             "seconds since the last status report went to the EvM (0: none yet); the EvM's ruTimeout applies to it");
  const mem::PoolStats pool = context().pool().stats();
  sink.gauge("pool_blocks_used", static_cast<double>(pool.blocks_used()), "blocks of this unit's pool in use");
  sink.gauge("pool_reserved_bytes", static_cast<double>(pool.bytes_reserved), "bytes this unit's pool holds");
}

}  // namespace daqx::evb::ru
