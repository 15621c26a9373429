// Pools of fixed-size blocks in size classes, carved from chunks, with O(1) lock-free allocate and release.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
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
  // Free blocks each thread keeps per size class it uses, so that most allocations and releases touch no line
  // another core writes (SizeClass). A class's caches are smaller when the class is small or its blocks large
  // (at most a quarter of the class's blocks and 2 MiB per cache; under 2 blocks: none). 0: no caches.
  std::size_t thread_cache_blocks = 32;

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
struct ThreadCache;
class ThreadCacheDirectory;

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
// Free blocks are on two shared lists, each on its own cache line: releases push onto the freed list, allocations
// pop from the allocation list and, when it runs dry, take the whole freed list at once (one exchange) as the new
// allocation list. In front of them each thread has a cache of free blocks of the class (ThreadCache, up to
// PoolConfig::thread_cache_blocks): an allocation takes the thread's most recently cached block, a release puts
// the block into the releasing thread's cache; neither touches a line another core writes. An empty cache takes
// a batch from the allocation list with one exchange of its head, a full cache gives half back to the freed list
// with one exchange. Where one thread allocates and another releases, the blocks thus move between the cores in
// batches, not one by one.
//
// No free block is stranded in a cache: an allocation that would fail (nothing shared left, no growth) first
// empties every other thread's cache of the class into the shared lists; while the pool is flagged exhausted,
// releases bypass the caches, so on_available() fires on the first release as without caches; a thread's caches
// go back when it exits; a class that goes first disowns the caches threads still have of it.
//
// Counting without a shared counter per operation: each cache counts what its thread allocated and released
// and adds the difference to the class's count when it refills or gives back, so blocks_used (read under the
// directory's mutex) is exact when the threads are quiet. The high-water mark is raised at those moments, by
// the most the thread's count reached since the last: it may be off by up to one cache's capacity for each other
// thread that holds a cache (never above what the class has), and is never below the blocks in use now.
// The views' descriptors (Ref::view, Pool::wrap_foreign) have no caches: a pool has few, a view lives for a
// short hand-over, and cached descriptors would only shrink the supply their exhaustion is signalled on.
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
  // Up to out.size() blocks with window (0, bytes) into out[0], out[1], ...; how many. The slots after them are
  // left empty when the class runs dry (counted once).
  std::size_t allocate(std::size_t bytes, std::span<Ref> out) noexcept;
  // A view of size bytes at memory inside parent (which gains an owner); empty when none is left.
  Ref allocate_view(Block* parent, std::byte* memory, std::size_t size) noexcept;
  // A descriptor over foreign memory (Pool::wrap_foreign).
  Ref allocate_foreign(std::byte* memory, std::size_t size, std::uint64_t token, Chunk* registrations) noexcept;
  void free(Block* block) noexcept;

  SizeClassStats stats() const noexcept;
  // Blocks in use (the caches' blocks are free); adds the blocks the threads' caches hold to *cached if given.
  std::size_t blocks_used(std::size_t* cached = nullptr) const noexcept;
  // Blocks each thread's cache of this class holds at most (0: no caches).
  std::size_t thread_cache_capacity() const noexcept { return cache_capacity_; }

 private:
  friend class Pool;
  friend class ThreadCacheDirectory;
  Block* pop() noexcept;
  void push(Block* block) noexcept;
  // Up to max blocks off the allocation list with one exchange (refilling it from the freed list if empty): the
  // first's index + 1 (0: none) and how many in count, linked through next_free_.
  std::uint32_t pop_batch(std::size_t max, std::uint32_t& count) noexcept;
  // Puts the blocks linked from first to last (index + 1) onto the freed list with one exchange.
  void push_segment(std::uint32_t first, std::uint32_t last) noexcept;
  std::uint32_t last_of(std::uint32_t first, std::uint32_t count) const noexcept;  // count - 1 links on
  // One free block from anywhere: the thread's cache, the shared lists, growth, other threads' caches.
  Block* take() noexcept;
  ThreadCache* thread_cache() noexcept;
  Block* take_cached(ThreadCache& cache) noexcept;
  bool put_cached(ThreadCache& cache, Block* block) noexcept;  // false: the caller frees to the shared list
  void give_back(ThreadCache& cache, std::uint32_t count) noexcept;  // the cache's first count blocks
  void flush(ThreadCache& cache) noexcept;  // the cache's balance into used_
  void steal_cached() noexcept;
  void retire_cache(ThreadCache& cache) noexcept;  // thread exit, under the directory's mutex
  void count_shared_allocation() noexcept;
  void raise_high_water(std::size_t used) noexcept;
  void prepare(Block* block, std::size_t bytes) noexcept;
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
  std::size_t cache_capacity_ = 0;  // 0: no caches
  std::size_t cache_id_ = 0;        // this class's slot in every thread's ThreadCacheSlots
  std::vector<ThreadCache*> caches_;  // every thread's cache of this class; under the directory's mutex
  // Blocks in use, modulo 2^64, not counting the caches' balances.
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
  // Up to out.size() blocks of the class that holds bytes, for a batch of frames: out[0], out[1], ... get them
  // (what they held is released), the rest stay empty when the class runs dry; returns how many. One lookup of the
  // thread's cache and one lock of it for the whole batch.
  std::size_t allocate(std::size_t bytes, std::span<Ref> out) noexcept;
  // A chain of blocks holding bytes in total (largest class for all but the last piece). All or nothing.
  Ref allocate_chain(std::size_t bytes) noexcept;
  // A block over memory this pool does not own (a peer's, mapped here), window (0, size), from the view
  // descriptors; when its last owner releases it, the ForeignRelease is told token. Empty when no descriptor is
  // left (on_available says when one is back). The normal blocks' hot path is untouched: only the views' free
  // path looks at the flag. `registrations`, when given, is what Block::key() answers for the block and its views
  // (a transport's record of the peer's memory, so that it can pass such a block on to a third peer); it must
  // outlive them. Without it the block has no registration: a transport that needs one copies it.
  Ref wrap_foreign(std::byte* memory, std::size_t size, std::uint64_t token, Chunk* registrations = nullptr) noexcept;
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
  void note_exhausted() noexcept { exhausted_.store(true, std::memory_order_seq_cst); }
  bool exhausted() const noexcept { return exhausted_.load(std::memory_order_relaxed); }
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
