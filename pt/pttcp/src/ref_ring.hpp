// A fixed-capacity ring of Refs: the send queue of one connection, with no allocation after construction.
#pragma once

#include <cstddef>
#include <vector>

#include "daqx/mempool/ref.hpp"

namespace daqx::pttcp {

class RefRing {
 public:
  explicit RefRing(std::size_t capacity) : slots_(capacity) {}
  bool empty() const noexcept { return count_ == 0; }
  bool full() const noexcept { return count_ == slots_.size(); }
  std::size_t size() const noexcept { return count_; }
  std::size_t capacity() const noexcept { return slots_.size(); }
  void push(mem::Ref&& ref) noexcept {
    slots_[(head_ + count_) % slots_.size()] = std::move(ref);
    ++count_;
  }
  mem::Ref& at(std::size_t i) noexcept { return slots_[(head_ + i) % slots_.size()]; }
  mem::Ref& front() noexcept { return slots_[head_]; }
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
  std::vector<mem::Ref> slots_;
  std::size_t head_ = 0;
  std::size_t count_ = 0;
};

}  // namespace daqx::pttcp
