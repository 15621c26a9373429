// Buffer reference: move-only ownership of a chain of pool blocks, each with a data window.
#pragma once

#include <cstddef>
#include <span>
#include <utility>

#include "daqx/mempool/block.hpp"
#include "daqx/mempool/misuse.hpp"

namespace daqx::mem {

// A Ref owns the head block of a chain; each block owns its successor. Moving a Ref moves ownership
// (the source becomes empty); destroying or reset() gives the blocks back to their pools. share() is the
// cheap copy for fan-out: both Refs then own the same blocks, which must no longer be changed.
class Ref {
 public:
  Ref() noexcept = default;
  Ref(Ref&& other) noexcept : head_(std::exchange(other.head_, nullptr)) {}
  Ref& operator=(Ref&& other) noexcept {
    if (this != &other) {
      reset();
      head_ = std::exchange(other.head_, nullptr);
    }
    return *this;
  }
  Ref(const Ref&) = delete;
  Ref& operator=(const Ref&) = delete;
  ~Ref() { reset(); }

  explicit operator bool() const noexcept { return head_ != nullptr; }
  bool empty() const noexcept { return head_ == nullptr; }

  // The head block's data window.
  std::byte* data() const noexcept { return checked_head()->data(); }
  std::size_t size() const noexcept { return checked_head()->size(); }
  std::size_t offset() const noexcept { return checked_head()->offset(); }
  std::size_t capacity() const noexcept { return checked_head()->capacity(); }
  std::span<std::byte> bytes() const noexcept { return {data(), size()}; }
  template <typename T>
  T* as() const noexcept { return reinterpret_cast<T*>(data()); }

  // Moves the head block's window; the window must lie inside the block and the block must not be shared.
  void set_window(std::size_t offset, std::size_t size) noexcept;
  void resize(std::size_t size) noexcept { set_window(offset(), size); }

  const Block* head() const noexcept { return head_; }
  Block* head() noexcept { return head_; }
  // Sum of the windows over the whole chain, and the number of blocks in it.
  std::size_t total_size() const noexcept;
  std::size_t chain_length() const noexcept;
  bool shared() const noexcept { return head_ != nullptr && head_->shared(); }

  // A second owner of the same chain (one atomic increment, no copy).
  Ref share() const noexcept;
  // A new block that shows `size` bytes of the head block's window from `offset` on, without copying: it keeps
  // the head block alive (one more owner) and has a window of its own, and its own place in a chain. For
  // handing out several frames that arrived in one buffer. Empty when the pool has no view left (configured
  // with PoolConfig::views; wait for on_available as for blocks) or the range is outside the window.
  Ref view(std::size_t offset, std::size_t size) const noexcept;
  // Links tail after the last block of this chain (which must not be shared); tail becomes empty.
  void append(Ref&& tail) noexcept;
  // Cuts the chain after the head and returns the rest.
  Ref detach_next() noexcept;

  // Loaning to the network: into_raw() gives up ownership without releasing (e.g. as a work-request id)
  // and from_raw() takes it back on completion. Completing one loan twice is reported as a double release.
  [[nodiscard]] Block* into_raw() && noexcept { return std::exchange(head_, nullptr); }
  static Ref from_raw(Block* head) noexcept { return Ref(head); }

  void reset() noexcept {
    if (head_ != nullptr) release_chain(std::exchange(head_, nullptr));
  }

 private:
  friend class SizeClass;
  explicit Ref(Block* head) noexcept : head_(head) {}
  const Block* checked_head() const noexcept {
    if constexpr (kChecks) {
      if (head_ == nullptr) report_misuse(Misuse::use_after_release, "access through an empty or released Ref");
    }
    return head_;
  }

  Block* head_ = nullptr;
};

}  // namespace daqx::mem
