// Buffer reference operations that walk or change a chain, and the release of a chain to its pools.
#include "daqx/mempool/ref.hpp"

#include <string>

#include "daqx/mempool/pool.hpp"

namespace daqx::mem {

void release_chain(Block* block) noexcept {
  while (block != nullptr) {
    // A sole owner needs no atomic decrement: nobody else can share() a block they do not own.
    std::uint32_t before = block->owners_.load(std::memory_order_acquire);
    if (before == 1) {
      block->owners_.store(0, std::memory_order_relaxed);
    } else {
      before = block->owners_.fetch_sub(1, std::memory_order_acq_rel);
    }
    if (before > 1) return;  // still owned elsewhere, and so is the rest of the chain
    if (before == 0) {
      // Released when nobody owned it: undo the wrap and let free() report it.
      block->owners_.store(0, std::memory_order_relaxed);
      block->owner().free(block);
      return;
    }
    Block* next = block->next_;
    block->next_ = nullptr;
    Block* parent = std::exchange(block->parent_, nullptr);
    block->owner().free(block);
    // A view's last owner is gone: so is its hold on the block whose memory it showed (never itself a view).
    if (parent != nullptr) release_chain(parent);
    block = next;
  }
}

void Ref::set_window(std::size_t offset, std::size_t size) noexcept {
  const Block* head = checked_head();
  if (head == nullptr) return;
  if (offset > head->capacity_ || size > head->capacity_ - offset) {
    report_misuse(Misuse::bad_window, "window (" + std::to_string(offset) + ", " + std::to_string(size) +
                                          ") outside a block of " + std::to_string(head->capacity_) + " B");
    return;
  }
  if (head->shared()) {
    report_misuse(Misuse::shared_mutation, "set_window on a shared block");
    return;
  }
  head_->offset_ = offset;
  head_->size_ = size;
}

std::size_t Ref::total_size() const noexcept {
  std::size_t total = 0;
  for (const Block* block = head_; block != nullptr; block = block->next_) total += block->size_;
  return total;
}

std::size_t Ref::chain_length() const noexcept {
  std::size_t length = 0;
  for (const Block* block = head_; block != nullptr; block = block->next_) ++length;
  return length;
}

Ref Ref::view(std::size_t offset, std::size_t size) const noexcept {
  const Block* head = checked_head();
  if (head == nullptr) return {};
  if (offset > head->size_ || size > head->size_ - offset) {
    report_misuse(Misuse::bad_window, "view (" + std::to_string(offset) + ", " + std::to_string(size) +
                                          ") outside a window of " + std::to_string(head->size_) + " B");
    return {};
  }
  std::byte* memory = head->data() + offset;
  // A view of a view shows the same memory: it holds the block that owns it, so chains of holds never form.
  Block* parent = const_cast<Block*>(head->parent_ != nullptr ? head->parent_ : head);
  SizeClass* views = parent->owner().pool().views_.get();
  if (views == nullptr) return {};
  return views->allocate_view(parent, memory, size);
}

Ref Ref::share() const noexcept {
  Block* head = const_cast<Block*>(checked_head());
  if (head == nullptr) return {};
  head->owners_.fetch_add(1, std::memory_order_relaxed);
  return Ref(head);
}

void Ref::append(Ref&& tail) noexcept {
  if (head_ == nullptr) {
    head_ = std::exchange(tail.head_, nullptr);
    return;
  }
  Block* last = head_;
  for (;;) {
    if (last->shared()) {
      // Linking after a shared block would change what its other owners see.
      report_misuse(Misuse::shared_mutation, "append to a chain that contains a shared block");
      return;
    }
    if (last->next_ == nullptr) break;
    last = last->next_;
  }
  last->next_ = std::exchange(tail.head_, nullptr);
}

Ref Ref::detach_next() noexcept {
  if (checked_head() == nullptr) return {};
  if (head_->shared()) {
    report_misuse(Misuse::shared_mutation, "detach_next on a shared block");
    return {};
  }
  return Ref(std::exchange(head_->next_, nullptr));
}

}  // namespace daqx::mem
