// Sizes with a given mean and spread, drawn from a log-normal distribution as a pure function of a key, so
// that a sender and a checker agree on every size without exchanging them.
#pragma once

#include <cstdint>

namespace daqx::apps {

class LogNormalSizes {
 public:
  // mean and standard deviation (spread) in bytes; sizes are clamped to [0, max]. spread 0 (or mean 0):
  // every size is the mean.
  LogNormalSizes(std::uint32_t mean, std::uint32_t spread, std::uint32_t max) noexcept;
  LogNormalSizes() noexcept : LogNormalSizes(0, 0, 0) {}

  // The size for key (a well-mixed number, e.g. from splitmix64): the same key always gives the same size.
  std::uint32_t size(std::uint64_t key) const noexcept;

 private:
  std::uint32_t mean_ = 0;
  std::uint32_t max_ = 0;
  bool fixed_ = true;
  double mu_ = 0;  // the normal distribution's parameters whose exponential has the requested mean and spread
  double sigma_ = 0;
};

}  // namespace daqx::apps
