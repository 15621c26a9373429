// The EvM's event numbering and its choice of which builder unit gets the next batch: highest priority first,
// round-robin among equals. Pure (no messaging, no clock), so it is tested without processes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

namespace daqx::evb {

class EventAssigner {
 public:
  // What limits how many events exist to assign: maxEvents (0: none) and the trigger rate (0: as fast as asked).
  struct Limits {
    std::uint64_t max_events = 0;
    double trigger_rate = 0;
  };

  // A new run: events from 1, the round-robin from the first builder.
  void start_run();

  // Events that may be numbered now, `seconds_since_start` into the run (UINT64_MAX: no limit).
  std::uint64_t events_available(const Limits& limits, double seconds_since_start) const;

  // Numbers `count` events and returns the first.
  std::uint64_t take(std::uint32_t count);
  std::uint64_t next_event() const { return next_event_; }

  // Among `builders` builders, the one to serve: `priority_of(i)` gives builder i's priority, or nothing when it
  // has no free slot. Highest priority wins; among equals the turn goes round from the one after the last chosen.
  template <class PriorityOf>
  std::optional<std::size_t> choose_builder(std::size_t builders, PriorityOf&& priority_of);

  // The chosen builder did not take its batch (it waits for a fuller one): its turn again next time.
  void turn_again(std::size_t builder) { next_builder_ = builder; }

 private:
  std::uint64_t next_event_ = 1;
  std::size_t next_builder_ = 0;
};

template <class PriorityOf>
std::optional<std::size_t> EventAssigner::choose_builder(std::size_t builders, PriorityOf&& priority_of) {
  std::optional<std::size_t> best;
  std::uint16_t best_priority = 0;
  for (std::size_t k = 0; k < builders; ++k) {
    const std::size_t i = (next_builder_ + k) % builders;
    const std::optional<std::uint16_t> priority = priority_of(i);
    if (!priority) continue;
    if (!best || *priority > best_priority) {
      best = i;
      best_priority = *priority;
    }
  }
  if (best) next_builder_ = (*best + 1) % builders;
  return best;
}

}  // namespace daqx::evb
