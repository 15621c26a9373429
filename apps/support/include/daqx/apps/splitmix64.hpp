// SplitMix64, the mixing function that turns counters into well-spread 64-bit numbers: synthetic data and
// sizes are pure functions of (seed, event, source) through it.
#pragma once

#include <cstdint>

namespace daqx::apps {

constexpr std::uint64_t splitmix64(std::uint64_t x) noexcept {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

}  // namespace daqx::apps
