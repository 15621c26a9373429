// Latency statistics (round trips, build times): minimum, median, 99th percentile and maximum.
#pragma once

#include <cstddef>
#include <span>

namespace daqx::apps {

struct LatencySummary {
  std::size_t count = 0;  // samples summarised; all values are 0 when there were none
  double min = 0;
  double median = 0;  // the middle sample, or the mean of the two middle ones for an even count
  double p99 = 0;     // nearest rank: the smallest sample with at least 99 % of the samples at or below it
  double max = 0;
};

// Nearest-rank percentile (fraction in (0, 1]) of samples that are sorted ascending; 0 when empty.
double percentile_of_sorted(std::span<const double> sorted, double fraction) noexcept;

// Sorts samples in place and summarises them.
LatencySummary summarize_latencies(std::span<double> samples) noexcept;

}  // namespace daqx::apps
