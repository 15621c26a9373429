// A bounded ring of Refs: a transport's send queue for one connection (pttcp, ptofi, ptibv). Its slots grow by
// doubling as the queue first gets that long, up to the capacity, and are kept from then on: a connection that
// carries a few frames at a time costs a few slots, not its whole capacity (a context of hundreds of peers would
// otherwise reserve tens of KiB per peer), and a busy one stops allocating after its first bursts.
#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

#include "daqx/mempool/ref.hpp"

namespace daqx::mem {

class RefRing {
 public:
  static constexpr std::size_t kFirstSlots = 16;

  explicit RefRing(std::size_t capacity)
      : capacity_(std::max<std::size_t>(1, capacity)), slots_(std::min(capacity_, kFirstSlots)) {}
  bool empty() const noexcept { return count_ == 0; }
  bool full() const noexcept { return count_ == capacity_; }
  std::size_t size() const noexcept { return count_; }
  std::size_t capacity() const noexcept { return capacity_; }
  // Not when full. Allocates only when the queue is longer than it has ever been (at most log2(capacity / 16)
  // times in a connection's life); an allocation that fails then ends the process, as any on a data path would.
  void push(Ref&& ref) noexcept {
    if (count_ == slots_.size()) grow();
    slots_[(head_ + count_) % slots_.size()] = std::move(ref);
    ++count_;
  }
  Ref& at(std::size_t i) noexcept { return slots_[(head_ + i) % slots_.size()]; }
  Ref& front() noexcept { return slots_[head_]; }
  // Moves the first frame out (the caller owns it now).
  Ref take_front() noexcept {
    Ref ref = std::move(slots_[head_]);
    head_ = (head_ + 1) % slots_.size();
    --count_;
    return ref;
  }
  // Drops the first frame: its blocks go back to their pools.
  void pop() noexcept {
    slots_[head_].reset();
    head_ = (head_ + 1) % slots_.size();
    --count_;
  }
  void clear() noexcept {
    while (!empty()) pop();
    head_ = 0;
  }

 private:
  void grow() noexcept {
    std::vector<Ref> larger(std::min(capacity_, slots_.size() * 2));
    for (std::size_t i = 0; i < count_; ++i) larger[i] = std::move(slots_[(head_ + i) % slots_.size()]);
    slots_.swap(larger);
    head_ = 0;
  }

  std::size_t capacity_;
  std::vector<Ref> slots_;
  std::size_t head_ = 0;
  std::size_t count_ = 0;
};

}  // namespace daqx::mem
