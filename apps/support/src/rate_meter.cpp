// One-second rate windows, published through relaxed atomics.
#include "daqx/apps/rate_meter.hpp"

namespace daqx::apps {
namespace {
constexpr RateMeter::Clock::duration kWindow = std::chrono::seconds(1);
constexpr RateMeter::Clock::duration kStale = std::chrono::seconds(2);
}  // namespace

void RateMeter::start(Clock::time_point now, std::uint64_t frames, std::uint64_t bytes) noexcept {
  window_start_ = now;
  frames_at_start_ = frames;
  bytes_at_start_ = bytes;
  published_at_.store(0, std::memory_order_relaxed);
  frames_per_second_.store(0, std::memory_order_relaxed);
  bytes_per_second_.store(0, std::memory_order_relaxed);
}

void RateMeter::update(Clock::time_point now, std::uint64_t frames, std::uint64_t bytes) noexcept {
  const Clock::duration elapsed = now - window_start_;
  if (elapsed < kWindow) return;
  const double seconds = std::chrono::duration<double>(elapsed).count();
  frames_per_second_.store(static_cast<double>(frames - frames_at_start_) / seconds, std::memory_order_relaxed);
  bytes_per_second_.store(static_cast<double>(bytes - bytes_at_start_) / seconds, std::memory_order_relaxed);
  published_at_.store(now.time_since_epoch().count(), std::memory_order_release);
  window_start_ = now;
  frames_at_start_ = frames;
  bytes_at_start_ = bytes;
}

Rates RateMeter::read(Clock::time_point now) const noexcept {
  const Clock::rep published = published_at_.load(std::memory_order_acquire);
  if (published == 0 || now - Clock::time_point(Clock::duration(published)) > kStale) return {};
  return Rates{frames_per_second_.load(std::memory_order_relaxed), bytes_per_second_.load(std::memory_order_relaxed)};
}

}  // namespace daqx::apps
