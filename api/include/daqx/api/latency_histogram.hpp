// A latency distribution recorded lock-free on a hot path and read by reports as a Prometheus histogram.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <vector>

namespace daqx {

// What a report hands out: cumulative counts per upper bound (the +Inf bucket is `count`).
struct HistogramSnapshot {
  std::vector<double> upper_bounds;          // ascending, in seconds
  std::vector<std::uint64_t> cumulative;     // observations at or below each bound
  double sum = 0;                            // of all observations, in seconds
  std::uint64_t count = 0;
};

// Buckets 1-2.5-5 per decade from 1 us to 10 s: event building and round trips range from microseconds on
// shared memory to seconds under back-pressure. Any thread may record; a report reads relaxed atomics, so a
// snapshot taken during a record may be one observation behind in some bucket, never torn.
class LatencyHistogram {
 public:
  static constexpr std::array<double, 22> kUpperBounds = {
      1e-6, 2.5e-6, 5e-6, 1e-5, 2.5e-5, 5e-5, 1e-4, 2.5e-4, 5e-4, 1e-3, 2.5e-3,
      5e-3, 1e-2, 2.5e-2, 5e-2, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0};

  void record(std::chrono::nanoseconds duration) noexcept {
    const double seconds = std::chrono::duration<double>(duration).count();
    std::size_t bucket = 0;
    while (bucket < kUpperBounds.size() && seconds > kUpperBounds[bucket]) ++bucket;
    counts_[bucket].fetch_add(1, std::memory_order_relaxed);
    const auto ns = duration.count() < 0 ? 0 : static_cast<std::uint64_t>(duration.count());
    sum_ns_.fetch_add(ns, std::memory_order_relaxed);
  }

  void reset() noexcept {
    for (auto& count : counts_) count.store(0, std::memory_order_relaxed);
    sum_ns_.store(0, std::memory_order_relaxed);
  }

  HistogramSnapshot snapshot() const {
    HistogramSnapshot snapshot;
    snapshot.upper_bounds.assign(kUpperBounds.begin(), kUpperBounds.end());
    std::uint64_t running = 0;
    for (std::size_t i = 0; i < kUpperBounds.size(); ++i) {
      running += counts_[i].load(std::memory_order_relaxed);
      snapshot.cumulative.push_back(running);
    }
    snapshot.count = running + counts_[kUpperBounds.size()].load(std::memory_order_relaxed);
    snapshot.sum = static_cast<double>(sum_ns_.load(std::memory_order_relaxed)) * 1e-9;
    return snapshot;
  }

 private:
  std::array<std::atomic<std::uint64_t>, kUpperBounds.size() + 1> counts_{};  // the last one: above 10 s
  std::atomic<std::uint64_t> sum_ns_{0};
};

}  // namespace daqx
