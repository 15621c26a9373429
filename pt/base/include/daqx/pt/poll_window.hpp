// How long a transport thread polls after its last work before it sleeps, with pollTime=auto: adapted to what
// its sleeps show, as KVM's halt-polling does for a vCPU. A thread woken by work after a short sleep would have
// found that work polling (or nearly: the sleep's length includes the wake-up's own latency, tens of
// microseconds on a busy host, which is why "short" is kShortSleepWindows windows): its window doubles (from
// kPollWindowStart, up to the longest). A longer sleep, or one that ended with no work, shows that polling would
// have been spent in vain: the window halves, and below kPollWindowStart it is none. So a thread whose work
// comes in bursts far apart (a monitor's records, a control connection) stops spending a poll on every burst,
// and one whose work comes microseconds apart (a stream, a round trip) polls the whole window.
#pragma once

#include <algorithm>
#include <chrono>

namespace daqx::pt {

inline constexpr std::chrono::nanoseconds kPollWindowStart{std::chrono::microseconds(5)};
inline constexpr int kShortSleepWindows = 4;

class PollWindow {
 public:
  using Duration = std::chrono::nanoseconds;

  explicit PollWindow(Duration longest) noexcept
      : longest_(longest), short_sleep_(longest * kShortSleepWindows), current_(longest) {}

  Duration current() const noexcept { return current_; }

  // After a sleep of `slept` that ended with work (`woken_by_work`) or without (a deadline).
  void after_sleep(Duration slept, bool woken_by_work) noexcept {
    if (woken_by_work && slept < short_sleep_) {
      current_ = std::clamp(current_ * 2, std::min(kPollWindowStart, longest_), longest_);
    } else {
      current_ /= 2;
      if (current_ < kPollWindowStart) current_ = Duration::zero();
    }
  }

 private:
  Duration longest_;
  Duration short_sleep_;  // below this a sleep that ended with work counts as short
  Duration current_;
};

}  // namespace daqx::pt
