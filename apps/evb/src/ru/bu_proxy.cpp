// evb::ru::BuProxy: the RU's fragment blocks to the BUs; everything on the dispatch thread.
#include "ru/bu_proxy.hpp"

#include <utility>

namespace daqx::evb::ru {

BuProxy::BuProxy(ApplicationContext& context, const RuConfiguration& config, Outbox& outbox,
                 LostBuilder lost_builder)
    : config_(config), outbox_(outbox), pump_(context, outbox, [this] { drop_lost_builders(); }),
      lost_builder_(std::move(lost_builder)) {}

void BuProxy::start() {
  outbox_.clear();
  pump_.start();
  outbox_.reset_counters();
  counters_.reset();
}

void BuProxy::stop() {
  pump_.stop();
  outbox_.clear();
}

void BuProxy::start_run(std::uint32_t run) {
  pump_.start_run(run);
  outbox_.clear();
}

// Blocks to a BU were lost with the connection: the events they carried can never be built there. The EvM
// decides (it drops the BU if that generation is still current, and the BU is reset when it asks again);
// meanwhile this RU stops sending it that generation's work.
void BuProxy::drop_lost_builders() {
  for (Tid bu : outbox_.take_failed()) {
    if (bu == config_.evm) continue;  // status reports: the EvM's own silence handling covers it
    const std::uint32_t generation = pump_.generation_of(bu);
    if (generation == 0) continue;
    drop(bu, generation + 1);
    counters_.lost_connections.add_single_writer();
    lost_builder_(bu, generation);
  }
}

}  // namespace daqx::evb::ru
