// One transport's lane into one application's inbox: a single-producer, single-consumer ring. The transport's
// receive thread stages frames into it (plain stores) and publishes a whole batch with one release store;
// the application's dispatch thread takes them in order. Because only the dispatch thread frees slots, the
// producer knows exactly how much room there is: it never has to take back a frame it accepted.
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>
#include <span>
#include <stdexcept>

#include "daqx/api/frame.hpp"

namespace daqx::detail {

class DeliveryLane {
 public:
  explicit DeliveryLane(std::size_t capacity) {
    if (capacity < 2 || (capacity & (capacity - 1)) != 0)
      throw std::invalid_argument("lane capacity must be a power of two >= 2");
    mask_ = capacity - 1;
    slots_ = std::make_unique<Frame[]>(capacity);
  }

  // Producer: room for one more frame (published or staged)?
  bool has_room() const noexcept { return staged_ - head_.load(std::memory_order_acquire) <= mask_; }
  // Producer: nothing staged or published is still waiting for the consumer (a frame delivered inline now
  // would not overtake one of this lane).
  bool drained() const noexcept { return staged_ == head_.load(std::memory_order_acquire); }
  // Producer: stages a frame (call only with has_room()); it is seen once published.
  void stage(Frame&& frame) noexcept { slots_[staged_++ & mask_] = std::move(frame); }
  // Producer: makes every staged frame visible to the consumer; false when there were none to publish.
  bool publish() noexcept {
    if (tail_.load(std::memory_order_relaxed) == staged_) return false;
    tail_.store(staged_, std::memory_order_release);
    return true;
  }

  // Consumer: the next published frame, if any.
  bool take(Frame& out) noexcept {
    const std::size_t head = head_.load(std::memory_order_relaxed);
    if (head == tail_.load(std::memory_order_acquire)) return false;
    out = std::move(slots_[head & mask_]);
    head_.store(head + 1, std::memory_order_release);
    return true;
  }
  // Consumer: up to out.size() published frames in order, with one store of the head; how many.
  std::size_t take(std::span<Frame> out) noexcept {
    const std::size_t head = head_.load(std::memory_order_relaxed);
    const std::size_t ready = tail_.load(std::memory_order_acquire) - head;
    const std::size_t n = ready < out.size() ? ready : out.size();
    for (std::size_t i = 0; i < n; ++i) out[i] = std::move(slots_[(head + i) & mask_]);
    if (n > 0) head_.store(head + n, std::memory_order_release);
    return n;
  }
  // Either side: frames published and not taken (approximate from the producer's side).
  std::size_t waiting() const noexcept {
    return tail_.load(std::memory_order_acquire) - head_.load(std::memory_order_acquire);
  }
  std::size_t capacity() const noexcept { return mask_ + 1; }

 private:
  std::size_t mask_ = 0;
  std::unique_ptr<Frame[]> slots_;
  std::size_t staged_ = 0;  // producer only
  alignas(64) std::atomic<std::size_t> tail_{0};  // published up to here
  alignas(64) std::atomic<std::size_t> head_{0};  // taken up to here
};

}  // namespace daqx::detail
