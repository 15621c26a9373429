// A fixed-size block of a pool: its memory, the data window in use, and its link in a Ref chain.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "daqx/mempool/registrar.hpp"

namespace daqx::mem {

class SizeClass;

// Blocks are owned by their pool and handed out only through Ref; applications and transports see
// them through Ref accessors or by walking a chain (Ref::head(), Block::next()).
class Block {
 public:
  Block(const Block&) = delete;
  Block& operator=(const Block&) = delete;

  std::byte* data() const noexcept { return memory_ + offset_; }  // start of the data window
  std::size_t size() const noexcept { return size_; }             // bytes in the data window
  std::size_t offset() const noexcept { return offset_; }
  std::size_t capacity() const noexcept { return capacity_; }     // the whole block
  std::byte* memory() const noexcept { return memory_; }
  const Block* next() const noexcept { return next_; }            // following block of the chain
  Block* next() noexcept { return next_; }
  // The key a registrar stored for this block's chunk: O(1), no lookup on the send path.
  const RegistrationKey& key(std::size_t registrar_slot) const noexcept { return chunk_->keys[registrar_slot]; }
  bool shared() const noexcept { return owners_.load(std::memory_order_acquire) > 1; }
  SizeClass& owner() const noexcept { return *owner_; }
  // A view (Ref::view) is a window into another block's memory that keeps that block alive; it has no memory
  // of its own. Its parent is the block that owns the memory.
  bool is_view() const noexcept { return parent_ != nullptr; }
  // Memory the pool does not own (another process's, mapped here: Pool::wrap_foreign); releasing the block
  // tells the pool's ForeignRelease.
  bool is_foreign() const noexcept { return foreign_; }
  const Block* parent() const noexcept { return parent_; }

 private:
  friend class SizeClass;
  friend class Pool;
  friend class Ref;
  friend void release_chain(Block* head) noexcept;
  Block() = default;

  enum State : std::uint8_t { free_state = 0, in_use_state = 1 };

  std::byte* memory_ = nullptr;
  SizeClass* owner_ = nullptr;
  Chunk* chunk_ = nullptr;
  Block* next_ = nullptr;  // owns one reference to the next block of the chain
  Block* parent_ = nullptr;  // a view: owns one reference to the block whose memory it shows
  std::size_t offset_ = 0;
  std::size_t size_ = 0;
  std::size_t capacity_ = 0;
  std::atomic<std::uint32_t> owners_{0};
  std::atomic<std::uint32_t> next_free_{0};  // free-list link: index + 1, 0 ends the list
  std::atomic<std::uint8_t> state_{free_state};
  std::uint32_t index_ = 0;  // position in its size class, for the free list
  bool foreign_ = false;     // a view descriptor over foreign memory (Pool::wrap_foreign)
  std::uint64_t token_ = 0;  // foreign: what the ForeignRelease is told on release
};

// Gives a chain back: every block whose last owner this was returns to its pool. Iterative, noexcept.
void release_chain(Block* head) noexcept;

}  // namespace daqx::mem
