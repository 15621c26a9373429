// The block descriptors of one size class: address space for every block the class may ever have, reserved
// at once so that a free-list index finds its descriptor in O(1), but backed by memory only as chunks are added.
#pragma once

#include <cstddef>

#include "daqx/mempool/block.hpp"

namespace daqx::mem {

// A class allowed thousands of chunks (a pool's limit is a ceiling, not a plan) used to build and fault the
// descriptors of all of them when the pool was made: hundreds of MB per executive, and most of its start-up
// time. Here the pages of descriptors nobody constructed are never touched, so they cost address space only.
class DescriptorTable {
 public:
  explicit DescriptorTable(std::size_t count);  // std::bad_alloc when the address space is refused
  ~DescriptorTable();
  DescriptorTable(const DescriptorTable&) = delete;
  DescriptorTable& operator=(const DescriptorTable&) = delete;

  // Only descriptors that SizeClass has constructed (placement new, as it adds their chunk) may be used.
  Block& operator[](std::size_t index) const noexcept { return blocks_[index]; }
  Block* slot(std::size_t index) const noexcept { return blocks_ + index; }  // raw storage, for construction

 private:
  Block* blocks_ = nullptr;
  std::size_t bytes_ = 0;
};

}  // namespace daqx::mem
