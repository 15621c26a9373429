// Pools of fixed-size blocks in size classes, carved from chunks, with O(1) lock-free allocate and release.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "daqx/mempool/allocator.hpp"
#include "daqx/mempool/block.hpp"
#include "daqx/mempool/descriptor_table.hpp"
#include "daqx/mempool/ref.hpp"
#include "daqx/mempool/registrar.hpp"
#include "daqx/mempool/stats.hpp"

namespace daqx::mem {

struct SizeClassConfig {
  std::size_t block_size = 0;        // bytes in each block
  std::size_t blocks_per_chunk = 0;  // blocks carved from one chunk
  std::size_t initial_chunks = 1;    // created with the pool, so the hot path never grows at first
  std::size_t max_chunks = 1;        // growth stops here: then allocation fails softly
};

struct PoolConfig {
  std::string name;                     // hierarchical, e.g. "evb/ru/0/pool"
  std::vector<SizeClassConfig> classes;  // any order; sorted by block size when the pool is made
  // Where the pool's maker would like its memory (a transport: its device's node), -1 for no preference.
  // The executive honours it when no policy rule names the pool's allocator.
  int preferred_numa_node = -1;
  // Views (Ref::view) the pool can have out at once: descriptors without memory, made with the pool. 0: none.
  // Foreign blocks (Pool::wrap_foreign) are taken from the same descriptors.
  std::size_t views = 0;
  // The maker passes blocks to other processes (ptshm): the executive gives the pool the shared-memory variant
  // of the allocator the policy names (mem::shared_allocator).
  bool shared_memory = false;

  // Power-of-two classes from min_block to max_block; each chunk holds chunk_bytes (at least one block)
  // and each class may grow to max_bytes_per_class.
  static PoolConfig geometric(std::string name, std::size_t min_block, std::size_t max_block,
                              std::size_t chunk_bytes, std::size_t max_bytes_per_class,
                              std::size_t initial_chunks = 1);

  // The memory of its blocks when made (the initial chunks) and the most it may grow to (every class at its
  // max_chunks), for sizing a context before it starts.
  std::size_t initial_bytes() const noexcept;
  std::size_t max_bytes() const noexcept;
};

class Pool;

// Told when the last owner of a foreign block (Pool::wrap_foreign) lets it go, on the releasing thread: the
// memory's owner may have it back. Must not block for long and must not throw.
class ForeignRelease {
 public:
  virtual ~ForeignRelease() = default;
  virtual void released(std::uint64_t token) noexcept = 0;
};

// The blocks of one size: lock-free lists of free blocks (index + tag in one word, so no ABA) over descriptors
// made once for the maximum size, and chunks added by growth under the pool's mutex, off the hot path.
//
// Free blocks are on two lists, each on its own cache line: releases push onto the freed list, allocations pop
// from the allocation list and, when it runs dry, take the whole freed list at once (one exchange) as the new
// allocation list. Where one thread allocates and another releases (a sender and the thread that gets its
// blocks back, on two cores), each list's head then stays in its own thread's cache instead of moving between
// the cores twice per block. Nothing is held by a thread: both lists are the class's.
class SizeClass {
 public:
  SizeClass(Pool& pool, const SizeClassConfig& config);
  // The descriptors of a pool's views: no memory of their own (Ref::view).
  struct Views {};
  SizeClass(Pool& pool, std::size_t views, Views);
  ~SizeClass();
  SizeClass(const SizeClass&) = delete;
  SizeClass& operator=(const SizeClass&) = delete;

  std::size_t block_size() const noexcept { return config_.block_size; }
  bool holds_views() const noexcept { return views_; }
  Pool& pool() const noexcept { return pool_; }

  // One block with window (0, bytes), or an empty Ref when the class is exhausted (counted).
  Ref allocate(std::size_t bytes) noexcept;
  // A view of size bytes at memory inside parent (which gains an owner); empty when none is left.
  Ref allocate_view(Block* parent, std::byte* memory, std::size_t size) noexcept;
  // A descriptor over foreign memory (Pool::wrap_foreign).
  Ref allocate_foreign(std::byte* memory, std::size_t size, std::uint64_t token) noexcept;
  void free(Block* block) noexcept;

  SizeClassStats stats() const noexcept;

 private:
  friend class Pool;
  Block* pop() noexcept;
  void push(Block* block) noexcept;
  // The freed list becomes the allocation list (which is empty); false when there was nothing to take.
  bool take_freed() noexcept;
  Ref take_view(std::byte* memory, std::size_t size) noexcept;  // a descriptor with window (0, size), counted
  bool grow() noexcept;  // adds one chunk; false at the limit or when the system or a registrar refuses
  void register_chunks(std::size_t slot, Registrar& registrar);
  void deregister_chunks(std::size_t slot, Registrar& registrar) noexcept;

  Pool& pool_;
  SizeClassConfig config_;
  bool views_ = false;
  DescriptorTable blocks_;  // room for max_chunks * blocks_per_chunk descriptors; built chunk by chunk in grow()
  std::unique_ptr<Chunk[]> chunks_;
  std::atomic<std::size_t> chunk_count_{0};
  alignas(64) std::atomic<std::uint64_t> allocation_head_{0};  // (tag << 32) | (index + 1); popped
  std::atomic<bool> taking_freed_{false};                        // one thread at a time in take_freed()
  alignas(64) std::atomic<std::uint64_t> freed_head_{0};          // (tag << 32) | (index + 1); pushed
  alignas(64) std::atomic<std::size_t> used_{0};
  std::atomic<std::size_t> high_water_{0};
  std::atomic<std::uint64_t> failed_{0};
  std::atomic<std::uint64_t> double_releases_{0};
};

class Pool {
 public:
  // Creates the initial chunks of every class. Throws std::invalid_argument for a bad configuration and
  // std::runtime_error when the initial chunks cannot be had.
  Pool(PoolConfig config, std::shared_ptr<Allocator> allocator);
  ~Pool();
  Pool(const Pool&) = delete;
  Pool& operator=(const Pool&) = delete;

  const std::string& name() const noexcept { return config_.name; }
  Allocator& allocator() const noexcept { return *allocator_; }
  std::size_t max_block_size() const noexcept { return classes_.back()->block_size(); }

  // A block of the smallest class that holds bytes, window (0, bytes). Empty when that class is
  // exhausted or bytes exceeds the largest class: the caller backs off and waits for on_available.
  Ref allocate(std::size_t bytes) noexcept;
  // A chain of blocks holding bytes in total (largest class for all but the last piece). All or nothing.
  Ref allocate_chain(std::size_t bytes) noexcept;
  // A block over memory this pool does not own (a peer's, mapped here), window (0, size), from the view
  // descriptors; when its last owner releases it, the ForeignRelease is told token. Empty when no descriptor is
  // left (on_available says when one is back). The normal blocks' hot path is untouched: only the views' free
  // path looks at the flag.
  Ref wrap_foreign(std::byte* memory, std::size_t size, std::uint64_t token) noexcept;
  // Who is told of foreign releases; nullptr: nobody (releases after the teller is gone only free descriptors).
  void set_foreign_release(ForeignRelease* release) noexcept { foreign_release_.store(release, std::memory_order_release); }
  // Views of this pool's blocks out now (Ref::view), and how many there may be.
  std::size_t views_in_use() const noexcept;
  std::size_t views_total() const noexcept { return config_.views; }

  // Registers every existing and future chunk with registrar; returns its slot for Block::key().
  // Throws std::runtime_error when an existing chunk cannot be registered (nothing is left registered).
  std::size_t add_registrar(Registrar& registrar);
  // The same at a given slot (std::runtime_error if taken): an executive gives one registrar the same
  // slot in every pool, so a transport finds its key in any block without knowing the block's pool.
  void add_registrar(Registrar& registrar, std::size_t slot);
  void remove_registrar(std::size_t slot) noexcept;

  // Called (on the releasing thread) when a block is freed after an allocation failed; once per episode.
  void on_available(std::function<void()> callback);

  PoolStats stats() const;
  std::size_t blocks_in_use() const noexcept;
  // Where the chunks are, for tools that check placement (move_pages) from outside the process.
  std::vector<Chunk> chunks() const;

 private:
  friend class SizeClass;
  friend class Ref;
  SizeClass* class_for(std::size_t bytes) const noexcept;
  void register_at(Registrar& registrar, std::size_t slot);  // under config_mutex_
  void note_exhausted() noexcept { exhausted_.store(true, std::memory_order_release); }
  void note_freed() noexcept {
    if (exhausted_.load(std::memory_order_relaxed) && exhausted_.exchange(false, std::memory_order_acq_rel)) notify();
  }
  void notify() noexcept;

  PoolConfig config_;
  std::shared_ptr<Allocator> allocator_;
  std::vector<std::unique_ptr<SizeClass>> classes_;
  std::unique_ptr<SizeClass> views_;  // descriptors for Ref::view, when config_.views > 0
  // Serialises growth and registrar changes: both are rare and off the hot path.
  mutable std::mutex config_mutex_;
  std::array<Registrar*, kMaxRegistrars> registrars_{};
  std::atomic<bool> exhausted_{false};
  std::function<void()> on_available_;
  std::atomic<ForeignRelease*> foreign_release_{nullptr};
};

}  // namespace daqx::mem
