// A fixed-capacity ring of Refs: a transport's send queue for one connection, with no allocation after
// construction (pttcp, ptofi).
#pragma once

#include <cstddef>
#include <vector>

#include "daqx/mempool/ref.hpp"

namespace daqx::mem {

class RefRing {
 public:
  explicit RefRing(std::size_t capacity) : slots_(capacity) {}
  bool empty() const noexcept { return count_ == 0; }
  bool full() const noexcept { return count_ == slots_.size(); }
  std::size_t size() const noexcept { return count_; }
  std::size_t capacity() const noexcept { return slots_.size(); }
  void push(Ref&& ref) noexcept {
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
  std::vector<Ref> slots_;
  std::size_t head_ = 0;
  std::size_t count_ = 0;
};

}  // namespace daqx::mem
