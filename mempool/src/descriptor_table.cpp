#include "daqx/mempool/descriptor_table.hpp"

#include <sys/mman.h>

#include <new>
#include <type_traits>

#include "daqx/mempool/block.hpp"

namespace daqx::mem {

// Nothing runs when the table goes: a descriptor owns no resource of its own (its chunk and its chain are the
// size class's and the Refs' business).
static_assert(std::is_trivially_destructible_v<Block>);

DescriptorTable::DescriptorTable(std::size_t count) : bytes_(count * sizeof(Block)) {
  if (bytes_ == 0) return;
  // Anonymous pages read as zeros and are faulted on first write, one page of descriptors at a time.
  // MAP_NORESERVE: under the kernel's default overcommit policy untouched pages are not charged either.
  void* memory = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (memory == MAP_FAILED) throw std::bad_alloc();
  blocks_ = static_cast<Block*>(memory);
}

DescriptorTable::~DescriptorTable() {
  if (blocks_ != nullptr) munmap(blocks_, bytes_);
}

}  // namespace daqx::mem
