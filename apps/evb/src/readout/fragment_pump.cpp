// readout::FragmentPump (fragment_pump.hpp): the bounded rounds of sending and what they publish.
#include "readout/fragment_pump.hpp"

namespace daqx::evb::readout {

void FragmentPump::start() {
  running_ = true;
  sender_.start_run(0);
  sender_.reset_counters();
  for (Counter* c : {&counters_.fragments_sent, &counters_.bytes_sent, &counters_.blocks_sent, &counters_.events_dropped,
                     &counters_.pool_waits, &counters_.would_blocks, &counters_.send_errors})
    put(*c, 0);
}

void FragmentPump::stop() {
  running_ = false;
  sender_.clear();
  put(counters_.events_queued, 0);
  put(counters_.frames_waiting, 0);
}

void FragmentPump::drop(Tid bu, std::uint32_t generation) {
  bump(counters_.events_dropped, sender_.drop_bu(bu, generation));
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
  put(counters_.fragments_sent, sender_.fragments_sent());
  put(counters_.bytes_sent, sender_.bytes_sent());
  put(counters_.blocks_sent, sender_.blocks_sent());
  put(counters_.events_queued, sender_.events_queued());
  put(counters_.frames_waiting, outbox_.waiting());
  put(counters_.pool_waits, sender_.pool_waits());
  put(counters_.would_blocks, outbox_.would_blocks());
  put(counters_.send_errors, outbox_.errors());
}

}  // namespace daqx::evb::readout
