// A bounded lock-free multi-producer queue (D. Vyukov's sequence-numbered ring): the inbox of each
// application. try_push moves from its argument only when it succeeds, so a full queue loses nothing.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <stdexcept>
#include <utility>

namespace daqx::detail {

template <typename T>
class BoundedQueue {
 public:
  explicit BoundedQueue(std::size_t capacity) {
    if (capacity < 2 || (capacity & (capacity - 1)) != 0)
      throw std::invalid_argument("queue capacity must be a power of two >= 2");
    mask_ = capacity - 1;
    cells_ = std::make_unique<Cell[]>(capacity);
    for (std::size_t i = 0; i < capacity; ++i) cells_[i].sequence.store(i, std::memory_order_relaxed);
  }

  bool try_push(T& value) noexcept {
    std::size_t position = enqueue_.load(std::memory_order_relaxed);
    for (;;) {
      Cell& cell = cells_[position & mask_];
      std::size_t sequence = cell.sequence.load(std::memory_order_acquire);
      auto difference = static_cast<std::intptr_t>(sequence) - static_cast<std::intptr_t>(position);
      if (difference == 0) {
        if (enqueue_.compare_exchange_weak(position, position + 1, std::memory_order_relaxed)) {
          cell.value = std::move(value);
          cell.sequence.store(position + 1, std::memory_order_release);
          return true;
        }
      } else if (difference < 0) {
        return false;  // full
      } else {
        position = enqueue_.load(std::memory_order_relaxed);
      }
    }
  }

  bool try_pop(T& out) noexcept {
    std::size_t position = dequeue_.load(std::memory_order_relaxed);
    for (;;) {
      Cell& cell = cells_[position & mask_];
      std::size_t sequence = cell.sequence.load(std::memory_order_acquire);
      auto difference = static_cast<std::intptr_t>(sequence) - static_cast<std::intptr_t>(position + 1);
      if (difference == 0) {
        if (dequeue_.compare_exchange_weak(position, position + 1, std::memory_order_relaxed)) {
          out = std::move(cell.value);
          cell.sequence.store(position + mask_ + 1, std::memory_order_release);
          return true;
        }
      } else if (difference < 0) {
        return false;  // empty
      } else {
        position = dequeue_.load(std::memory_order_relaxed);
      }
    }
  }

  // Up to values.size() values in order, taking the cells they need with one exchange of the enqueue index:
  // how many (moved from values[0..n); the rest stay). Stops at the first cell not free yet.
  std::size_t try_push(std::span<T> values) noexcept {
    std::size_t position = enqueue_.load(std::memory_order_relaxed);
    for (;;) {
      std::size_t n = 0;
      while (n < values.size() &&
             cells_[(position + n) & mask_].sequence.load(std::memory_order_acquire) == position + n)
        ++n;
      if (n == 0) {
        // Full, or another producer moved the index: look again only in the second case.
        const std::size_t now = enqueue_.load(std::memory_order_relaxed);
        if (now == position) return 0;
        position = now;
        continue;
      }
      if (enqueue_.compare_exchange_weak(position, position + n, std::memory_order_relaxed)) {
        for (std::size_t i = 0; i < n; ++i) {
          Cell& cell = cells_[(position + i) & mask_];
          cell.value = std::move(values[i]);
          cell.sequence.store(position + i + 1, std::memory_order_release);
        }
        return n;
      }
    }
  }

  // Up to out.size() values in order with one exchange of the dequeue index: how many.
  std::size_t try_pop(std::span<T> out) noexcept {
    std::size_t position = dequeue_.load(std::memory_order_relaxed);
    for (;;) {
      std::size_t n = 0;
      while (n < out.size() &&
             cells_[(position + n) & mask_].sequence.load(std::memory_order_acquire) == position + n + 1)
        ++n;
      if (n == 0) {
        const std::size_t now = dequeue_.load(std::memory_order_relaxed);
        if (now == position) return 0;
        position = now;
        continue;
      }
      if (dequeue_.compare_exchange_weak(position, position + n, std::memory_order_relaxed)) {
        for (std::size_t i = 0; i < n; ++i) {
          Cell& cell = cells_[(position + i) & mask_];
          out[i] = std::move(cell.value);
          cell.sequence.store(position + i + mask_ + 1, std::memory_order_release);
        }
        return n;
      }
    }
  }

  std::size_t capacity() const noexcept { return mask_ + 1; }
  std::size_t size_approx() const noexcept {
    std::size_t in = enqueue_.load(std::memory_order_relaxed);
    std::size_t out = dequeue_.load(std::memory_order_relaxed);
    return in >= out ? in - out : 0;
  }

 private:
  struct Cell {
    std::atomic<std::size_t> sequence{0};
    T value{};
  };
  std::size_t mask_ = 0;
  std::unique_ptr<Cell[]> cells_;
  alignas(64) std::atomic<std::size_t> enqueue_{0};
  alignas(64) std::atomic<std::size_t> dequeue_{0};
};

}  // namespace daqx::detail
