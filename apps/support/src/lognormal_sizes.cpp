// Log-normal sizes: the distribution's parameters once, then Box-Muller on two numbers derived from the key.
#include "daqx/apps/lognormal_sizes.hpp"

#include <cmath>
#include <numbers>

#include "daqx/apps/splitmix64.hpp"

namespace daqx::apps {

// The log-normal's parameters for the requested mean m and standard deviation s:
// sigma^2 = ln(1 + s^2/m^2), mu = ln(m) - sigma^2/2.
LogNormalSizes::LogNormalSizes(std::uint32_t mean, std::uint32_t spread, std::uint32_t max) noexcept
    : mean_(mean), max_(max) {
  if (spread == 0 || mean == 0) return;
  const double m = mean;
  const double ratio = static_cast<double>(spread) / m;
  const double variance = std::log1p(ratio * ratio);
  fixed_ = false;
  sigma_ = std::sqrt(variance);
  mu_ = std::log(m) - variance / 2;
}

std::uint32_t LogNormalSizes::size(std::uint64_t key) const noexcept {
  if (fixed_) return mean_ < max_ ? mean_ : max_;
  // Counter-based: two uniform numbers that depend on the key only, then Box-Muller.
  const std::uint64_t r1 = splitmix64(key);
  const std::uint64_t r2 = splitmix64(key + 0x9E3779B97F4A7C15ull);
  const double u1 = static_cast<double>((r1 >> 11) + 1) * 0x1p-53;  // (0, 1]: the logarithm stays finite
  const double u2 = static_cast<double>(r2 >> 11) * 0x1p-53;        // [0, 1)
  const double normal = std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
  const double size = std::exp(mu_ + sigma_ * normal);
  const double max = max_;
  if (!(size < max)) return max_;  // also catches an infinity
  return static_cast<std::uint32_t>(std::floor(size + 0.5));
}

}  // namespace daqx::apps
