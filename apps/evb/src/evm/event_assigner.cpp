// EventAssigner: event numbering and how many events the trigger and maxEvents allow now.
#include "evm/event_assigner.hpp"

#include <algorithm>
#include <limits>

namespace daqx::evb::evm {

void EventAssigner::start_run() {
  next_event_ = 1;
}

std::uint64_t EventAssigner::events_available(const Limits& limits, double seconds_since_start) const {
  std::uint64_t limit = UINT64_MAX;
  if (limits.max_events != 0) limit = limits.max_events + 1 - std::min(next_event_, limits.max_events + 1);
  if (limits.trigger_rate > 0) {
    const double triggered = limits.trigger_rate * seconds_since_start;
    const std::uint64_t total = static_cast<std::uint64_t>(triggered);
    limit = std::min(limit, total + 1 > next_event_ ? total + 1 - next_event_ : 0);
  }
  return limit;
}

double EventAssigner::oldest_waiting(const Limits& limits, double seconds_since_start) const {
  if (limits.trigger_rate <= 0) return std::numeric_limits<double>::infinity();
  // Event k exists from k / rate into the run (events_available: floor(rate x t) of them at t).
  return seconds_since_start - static_cast<double>(next_event_) / limits.trigger_rate;
}

std::uint64_t EventAssigner::take(std::uint32_t count) {
  const std::uint64_t first = next_event_;
  next_event_ += count;
  return first;
}

}  // namespace daqx::evb::evm
