// The EvM's event numbering: the next event id of the run, and how many events the trigger and maxEvents allow
// now (which BU gets them is evm/builder_ranking's). Pure (no messaging, no clock), so it is tested without
// processes.
#pragma once

#include <cstdint>

namespace daqx::evb::evm {

class EventAssigner {
 public:
  // What limits how many events exist to assign: maxEvents (0: none) and the trigger rate (0: as fast as asked).
  struct Limits {
    std::uint64_t max_events = 0;
    double trigger_rate = 0;
  };

  // A new run: events from 1.
  void start_run();

  // Events that may be numbered now, `seconds_since_start` into the run (UINT64_MAX: no limit).
  std::uint64_t events_available(const Limits& limits, double seconds_since_start) const;

  // How long the oldest event not numbered yet has existed, `seconds_since_start` into the run: negative while it
  // does not exist yet; infinite without a trigger rate (events exist as soon as they are asked for).
  double oldest_waiting(const Limits& limits, double seconds_since_start) const;

  // Numbers `count` events and returns the first.
  std::uint64_t take(std::uint32_t count);
  std::uint64_t next_event() const { return next_event_; }

 private:
  std::uint64_t next_event_ = 1;
};

}  // namespace daqx::evb::evm
