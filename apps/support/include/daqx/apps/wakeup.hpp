// Lets one worker thread sleep until another thread has news for it (an acknowledgement, a send that may
// succeed, free pool blocks, stop) without spinning, and costs the notifier no lock while the worker is busy.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>

namespace daqx::apps {

class Wakeup {
 public:
  using Clock = std::chrono::steady_clock;

  // Read before checking the condition to wait for; pass it to wait_until.
  std::uint64_t generation() const noexcept { return generation_.load(std::memory_order_seq_cst); }

  void notify() noexcept {
    generation_.fetch_add(1, std::memory_order_seq_cst);
    // The one lock between threads: taken only when the worker sleeps, never while it is busy sending.
    if (sleeping_.load(std::memory_order_seq_cst)) {
      std::lock_guard lock(mutex_);
      changed_.notify_one();
    }
  }

  // Sleeps until notify() has been called after `seen` was read, or until `until`. A notify between
  // reading `seen` and this call is not lost: either we see the new generation, or the notifier sees us
  // sleeping (both are sequentially consistent) and waits for the mutex we hold until we are waiting.
  void wait_until(std::uint64_t seen, Clock::time_point until) {
    std::unique_lock lock(mutex_);
    sleeping_.store(true, std::memory_order_seq_cst);
    changed_.wait_until(lock, until, [&] { return generation_.load(std::memory_order_seq_cst) != seen; });
    sleeping_.store(false, std::memory_order_relaxed);
  }

 private:
  std::atomic<std::uint64_t> generation_{0};
  std::atomic<bool> sleeping_{false};
  std::mutex mutex_;
  std::condition_variable changed_;
};

}  // namespace daqx::apps
