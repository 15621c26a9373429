// readout::FragmentPump (fragment_pump.hpp): the bounded rounds of sending and what they publish.
#include "readout/fragment_pump.hpp"

#include "daqx/apps/text.hpp"

namespace daqx::evb::readout {

ParamSpec blocks_per_send_parameter() {
  return apps::param("blocksPerSend", ParamType::unsigned_integer, apps::to_text(std::uint64_t{kDefaultBlocksPerSend}),
                     "blocks", "the most fragment blocks for one BU handed over in one batch send", 1,
                     static_cast<double>(kMaxBatchFrames));
}

void FragmentPump::start() {
  running_ = true;
  sender_.start_run(0);
  sender_.reset_counters();
  counters_.reset();
}

void FragmentPump::stop() {
  running_ = false;
  sender_.clear();
  counters_.events_queued.set(0);
  counters_.frames_waiting.set(0);
}

void FragmentPump::drop(Tid bu, std::uint32_t generation) {
  counters_.events_dropped.add_single_writer(sender_.drop_bu(bu, generation));
  outbox_.drop(bu);
}

// Each pump is bounded (FragmentSender::pump) and posts the rest as a task; within a long dispatch round the
// executive runs waiting tasks every few frames once 2 ms have passed, so the ticker's status reports take turns
// with the filling. (Pumping straight from the handlers keeps an inline handler's sends on the receive thread,
// with no wake-up.)
void FragmentPump::schedule_pump() {
  if (!running_ || pump_posted_) return;
  pump_posted_ = true;
  context_.post_task([this] {
    pump_posted_ = false;
    pump();
  });
}

void FragmentPump::pump() {
  if (!running_) return;
  if (sender_.pump() == FragmentSender::Progress::more) schedule_pump();
  if (after_round_) after_round_();
  counters_.fragments_sent.set(sender_.fragments_sent());
  counters_.bytes_sent.set(sender_.bytes_sent());
  counters_.blocks_sent.set(sender_.blocks_sent());
  counters_.events_queued.set(sender_.events_queued());
  counters_.frames_waiting.set(outbox_.waiting());
  counters_.pool_waits.set(sender_.pool_waits());
  counters_.would_blocks.set(outbox_.would_blocks());
  counters_.send_errors.set(outbox_.errors());
}

}  // namespace daqx::evb::readout
