// evb::ru::BuProxy: the RU's fragment blocks to the BUs; everything on the dispatch thread.
#include "ru/bu_proxy.hpp"

#include <utility>

namespace daqx::evb::ru {

BuProxy::BuProxy(ApplicationContext& context, const RuConfiguration& config, Outbox& outbox,
                 LostBuilder lost_builder)
    : context_(context), config_(config), outbox_(outbox), sender_(context, outbox),
      lost_builder_(std::move(lost_builder)) {}

void BuProxy::start() {
  running_ = true;
  outbox_.clear();
  sender_.start_run(0);
  sender_.reset_counters();
  outbox_.reset_counters();
  for (Counter* c : {&counters_.fragments_sent, &counters_.bytes_sent, &counters_.blocks_sent,
                     &counters_.events_dropped, &counters_.lost_connections, &counters_.pool_waits,
                     &counters_.would_blocks, &counters_.send_errors})
    put(*c, 0);
}

void BuProxy::stop() {
  running_ = false;
  sender_.clear();
  outbox_.clear();
  put(counters_.events_queued, 0);
  put(counters_.frames_waiting, 0);
}

void BuProxy::start_run(std::uint32_t run) {
  sender_.start_run(run);
  outbox_.clear();
}

void BuProxy::drop(Tid bu, std::uint32_t generation) {
  bump(counters_.events_dropped, sender_.drop_bu(bu, generation));
  outbox_.drop(bu);
}

// Each pump is bounded (FragmentSender::pump) and posts the rest as a task; within a long dispatch round the
// executive runs waiting tasks every few frames once 2 ms have passed, so the ticker's status reports take turns
// with the filling. (Pumping straight from the handlers keeps an inline handler's sends on the receive thread,
// with no wake-up.)
void BuProxy::schedule_pump() {
  if (!running_ || pump_posted_) return;
  pump_posted_ = true;
  context_.post_task([this] {
    pump_posted_ = false;
    pump();
  });
}

void BuProxy::pump() {
  if (!running_) return;
  if (sender_.pump() == readout::FragmentSender::Progress::more) schedule_pump();
  drop_lost_builders();
  put(counters_.fragments_sent, sender_.fragments_sent());
  put(counters_.bytes_sent, sender_.bytes_sent());
  put(counters_.blocks_sent, sender_.blocks_sent());
  put(counters_.events_queued, sender_.events_queued());
  put(counters_.frames_waiting, outbox_.waiting());
  put(counters_.pool_waits, sender_.pool_waits());
  put(counters_.would_blocks, outbox_.would_blocks());
  put(counters_.send_errors, outbox_.errors());
}

// Blocks to a BU were lost with the connection: the events they carried can never be built there. The EvM
// decides (it drops the BU if that generation is still current, and the BU is reset when it asks again);
// meanwhile this RU stops sending it that generation's work.
void BuProxy::drop_lost_builders() {
  for (Tid bu : outbox_.take_failed()) {
    if (bu == config_.evm) continue;  // status reports: the EvM's own silence handling covers it
    const std::uint32_t generation = sender_.generation_of(bu);
    if (generation == 0) continue;
    drop(bu, generation + 1);
    bump(counters_.lost_connections);
    lost_builder_(bu, generation);
  }
}

}  // namespace daqx::evb::ru
