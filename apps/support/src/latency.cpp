// Percentiles by nearest rank over sorted samples.
#include "daqx/apps/latency.hpp"

#include <algorithm>
#include <cmath>

namespace daqx::apps {

double percentile_of_sorted(std::span<const double> sorted, double fraction) noexcept {
  if (sorted.empty()) return 0;
  const double rank = std::ceil(fraction * static_cast<double>(sorted.size()));  // 1-based
  const std::size_t index = rank <= 1 ? 0 : std::min(sorted.size(), static_cast<std::size_t>(rank)) - 1;
  return sorted[index];
}

LatencySummary summarize_latencies(std::span<double> samples) noexcept {
  LatencySummary summary;
  summary.count = samples.size();
  if (samples.empty()) return summary;
  std::sort(samples.begin(), samples.end());
  const std::size_t n = samples.size();
  summary.min = samples.front();
  summary.max = samples.back();
  summary.median = n % 2 == 1 ? samples[n / 2] : (samples[n / 2 - 1] + samples[n / 2]) / 2;
  summary.p99 = percentile_of_sorted(samples, 0.99);
  return summary;
}

}  // namespace daqx::apps
