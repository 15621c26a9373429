// Frame and byte rates over the last second, measured by the thread that counts and read by the control
// thread without locks.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

namespace daqx::apps {

struct Rates {
  double frames_per_second = 0;
  double bytes_per_second = 0;
};

// The counting thread calls update() as it goes (cheap: a comparison until a second has passed); each
// completed window of at least one second publishes its rates. read() is for any thread: a rate published
// more than two seconds ago means the traffic stopped, so it reads 0.
class RateMeter {
 public:
  using Clock = std::chrono::steady_clock;

  // Counting thread: starts a window at now with these totals and forgets the published rates.
  void start(Clock::time_point now, std::uint64_t frames, std::uint64_t bytes) noexcept;
  void update(Clock::time_point now, std::uint64_t frames, std::uint64_t bytes) noexcept;

  Rates read(Clock::time_point now) const noexcept;

 private:
  // Counting thread only.
  Clock::time_point window_start_{};
  std::uint64_t frames_at_start_ = 0;
  std::uint64_t bytes_at_start_ = 0;
  // Published (the two rates may be read from different windows: harmless for a gauge).
  std::atomic<double> frames_per_second_{0};
  std::atomic<double> bytes_per_second_{0};
  std::atomic<Clock::rep> published_at_{0};  // time_since_epoch of the window's end; 0: nothing yet
};

}  // namespace daqx::apps
