// Pools and size classes: lock-free free lists over preallocated descriptors, growth by whole chunks.
#include "daqx/mempool/pool.hpp"

#include <algorithm>
#include <new>
#include <stdexcept>
#include <string>
#include <thread>

#include "daqx/services/log.hpp"
#include "daqx/mempool/misuse.hpp"
#include "thread_cache.hpp"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
// A free block is poisoned so that a raw pointer kept after release is reported by AddressSanitizer.
#define DAQX_POISON(address, bytes) ASAN_POISON_MEMORY_REGION(address, bytes)
#define DAQX_UNPOISON(address, bytes) ASAN_UNPOISON_MEMORY_REGION(address, bytes)
#else
#define DAQX_POISON(address, bytes) ((void)(address), (void)(bytes))
#define DAQX_UNPOISON(address, bytes) ((void)(address), (void)(bytes))
#endif

namespace daqx::mem {
namespace {

constexpr std::uint64_t kIndexMask = 0xffffffffULL;

// What Block::key() finds in a foreign block: no registration (its memory is not this process's).
Chunk no_chunk;

constexpr std::uint64_t pack_head(std::uint64_t tag, std::uint32_t index_plus_one) {
  return (tag << 32) | index_plus_one;
}

// The most a thread's cache of one class holds, in bytes: a cache of large blocks saves little (filling one costs
// far more than taking it) and would keep much memory from the other threads.
constexpr std::size_t kThreadCacheBytes = std::size_t{2} << 20;

std::size_t cache_capacity_for(const SizeClassConfig& config, std::size_t wanted) {
  // A quarter of the class at most, so that a small class is not emptied into one thread's cache and every other
  // thread's allocation does not end in the steal path.
  const std::size_t capacity = std::min({wanted, config.blocks_per_chunk * config.max_chunks / 4,
                                         kThreadCacheBytes / config.block_size, std::size_t{1} << 16});
  return capacity < 2 ? 0 : capacity;
}

// Out of line and cold: building the message inline would give every release the stack frame of a string
// formatter (six saved registers and 300 B of stack) for a branch that is never taken in a correct program.
[[gnu::cold, gnu::noinline]] void report_double_release(std::uint32_t index, std::size_t block_size,
                                                        const std::string& pool_name) noexcept {
  report_misuse(Misuse::double_release, "block " + std::to_string(index) + " of " + std::to_string(block_size) +
                                            " B in pool '" + pool_name + "' was released twice");
}

}  // namespace

// ---- PoolConfig -------------------------------------------------------------------------------------

PoolConfig PoolConfig::geometric(std::string name, std::size_t min_block, std::size_t max_block,
                                 std::size_t chunk_bytes, std::size_t max_bytes_per_class,
                                 std::size_t initial_chunks) {
  PoolConfig config;
  config.name = std::move(name);
  for (std::size_t block = min_block; block <= max_block && block > 0; block *= 2) {
    SizeClassConfig size_class;
    size_class.block_size = block;
    size_class.blocks_per_chunk = std::max<std::size_t>(1, chunk_bytes / block);
    size_class.max_chunks = std::max<std::size_t>(1, max_bytes_per_class / (block * size_class.blocks_per_chunk));
    size_class.initial_chunks = std::min(initial_chunks, size_class.max_chunks);
    config.classes.push_back(size_class);
  }
  return config;
}

std::size_t PoolConfig::initial_bytes() const noexcept {
  std::size_t bytes = 0;
  for (const SizeClassConfig& c : classes) bytes += c.block_size * c.blocks_per_chunk * std::min(c.initial_chunks, c.max_chunks);
  return bytes;
}

std::size_t PoolConfig::max_bytes() const noexcept {
  std::size_t bytes = 0;
  for (const SizeClassConfig& c : classes) bytes += c.block_size * c.blocks_per_chunk * c.max_chunks;
  return bytes;
}

// ---- SizeClass --------------------------------------------------------------------------------------

SizeClass::SizeClass(Pool& pool, const SizeClassConfig& config)
    : pool_(pool),
      config_(config),
      blocks_(config.blocks_per_chunk * config.max_chunks),
      chunks_(new Chunk[config.max_chunks]),
      cache_capacity_(cache_capacity_for(config, pool.config_.thread_cache_blocks)) {
  if (cache_capacity_ > 0) cache_id_ = ThreadCacheDirectory::acquire_id();
}

SizeClass::SizeClass(Pool& pool, std::size_t views, Views)
    : pool_(pool),
      config_{0, views, 1, 1},
      views_(true),
      blocks_(views),
      chunks_(new Chunk[1]) {}

SizeClass::~SizeClass() {
  if (cache_capacity_ > 0) {
    {
      // Threads that still have a cache of this class find it disowned (and free it when they exit or when the id
      // is reused): nothing of this class is touched through it again. Its blocks go with the chunks.
      auto lock = ThreadCacheDirectory::lock();
      for (ThreadCache* cache : caches_) cache->size_class.store(nullptr, std::memory_order_relaxed);
      caches_.clear();
    }
    ThreadCacheDirectory::release_id(cache_id_);
  }
  if (views_) return;  // descriptors only: no memory to give back
  std::size_t chunks = chunk_count_.load(std::memory_order_acquire);
  for (std::size_t c = 0; c < chunks; ++c) {
    Chunk& chunk = chunks_[c];
    DAQX_UNPOISON(chunk.base, chunk.bytes);
    pool_.allocator_->deallocate({chunk.base, chunk.bytes});
  }
}

Block* SizeClass::pop() noexcept {
  for (;;) {
    std::uint64_t head = allocation_head_.load(std::memory_order_acquire);
    for (;;) {
      auto index_plus_one = static_cast<std::uint32_t>(head & kIndexMask);
      if (index_plus_one == 0) break;
      Block* block = &blocks_[index_plus_one - 1];
      // A stale read here is harmless: the tag makes the exchange fail if the head moved meanwhile.
      std::uint32_t next = block->next_free_.load(std::memory_order_relaxed);
      if (allocation_head_.compare_exchange_weak(head, pack_head((head >> 32) + 1, next), std::memory_order_acquire,
                                                 std::memory_order_acquire)) {
        // The next block's first line, for writing: a block that went to another core (a peer process reading
        // it through ptshm, a transport's thread) is fetched back while this one is filled, not when the next
        // header is written. A hint only: it never faults, and a block taken meanwhile by another thread loses
        // nothing.
        if (next != 0 && !views_) __builtin_prefetch(blocks_[next - 1].memory_, 1, 3);
        return block;
      }
    }
    if (!take_freed()) return nullptr;
  }
}

bool SizeClass::take_freed() noexcept {
  // One taker at a time: a second one would find the allocation list refilled (or the freed list empty) anyway.
  // Held for one exchange and one store.
  while (taking_freed_.exchange(true, std::memory_order_acquire)) {
    while (taking_freed_.load(std::memory_order_relaxed)) std::this_thread::yield();
  }
  bool have = true;
  std::uint64_t head = allocation_head_.load(std::memory_order_acquire);
  if ((head & kIndexMask) == 0) {
    // seq_cst pairs with the exhaustion flag, as push() does (Pool::note_freed).
    const std::uint64_t freed = freed_head_.exchange(0, std::memory_order_seq_cst);
    const auto first = static_cast<std::uint32_t>(freed & kIndexMask);
    have = first != 0;
    // Only take_freed() makes the empty allocation list non-empty, so a plain store cannot lose a block; a pop
    // that read an older head fails on the tag.
    if (have) allocation_head_.store(pack_head((head >> 32) + 1, first), std::memory_order_release);
  }
  taking_freed_.store(false, std::memory_order_release);
  return have;
}

void SizeClass::push(Block* block) noexcept {
  std::uint64_t head = freed_head_.load(std::memory_order_relaxed);
  for (;;) {
    block->next_free_.store(static_cast<std::uint32_t>(head & kIndexMask), std::memory_order_relaxed);
    // seq_cst pairs with the exhaustion flag (see Pool::note_freed): either the allocator that failed sees
    // this block on its retry, or this thread sees the flag and notifies.
    if (freed_head_.compare_exchange_weak(head, pack_head((head >> 32) + 1, block->index_ + 1),
                                          std::memory_order_seq_cst, std::memory_order_relaxed))
      return;
  }
}

std::uint32_t SizeClass::pop_batch(std::size_t max, std::uint32_t& count) noexcept {
  // Several blocks with one exchange: walk up to max links from the head, then swing the head past them. A link
  // read here may be stale when another thread pops meanwhile, but then the head's tag has moved and the exchange
  // fails; only pops change this list below an unchanged head, and descriptors are never freed, so the walk reads
  // valid memory. (Taking the whole freed list instead would leave the excess to be handed back, a second
  // exchange; and a walk of a few dozen descriptors costs less than a cache line moving between cores.)
  for (;;) {
    std::uint64_t head = allocation_head_.load(std::memory_order_acquire);
    for (;;) {
      const auto first = static_cast<std::uint32_t>(head & kIndexMask);
      if (first == 0) break;
      std::uint32_t n = 1;
      std::uint32_t after = blocks_[first - 1].next_free_.load(std::memory_order_relaxed);
      while (n < max && after != 0) {
        after = blocks_[after - 1].next_free_.load(std::memory_order_relaxed);
        ++n;
      }
      if (allocation_head_.compare_exchange_weak(head, pack_head((head >> 32) + 1, after), std::memory_order_acquire,
                                                 std::memory_order_acquire)) {
        count = n;
        return first;
      }
    }
    if (!take_freed()) {
      count = 0;
      return 0;
    }
  }
}

std::uint32_t SizeClass::last_of(std::uint32_t first, std::uint32_t count) const noexcept {
  std::uint32_t last = first;
  for (std::uint32_t i = 1; i < count; ++i) last = blocks_[last - 1].next_free_.load(std::memory_order_relaxed);
  return last;
}

void SizeClass::push_segment(std::uint32_t first, std::uint32_t last) noexcept {
  Block& tail = blocks_[last - 1];
  std::uint64_t head = freed_head_.load(std::memory_order_relaxed);
  for (;;) {
    tail.next_free_.store(static_cast<std::uint32_t>(head & kIndexMask), std::memory_order_relaxed);
    // seq_cst as in push().
    if (freed_head_.compare_exchange_weak(head, pack_head((head >> 32) + 1, first), std::memory_order_seq_cst,
                                          std::memory_order_relaxed))
      return;
  }
}

ThreadCache* SizeClass::thread_cache() noexcept {
  if (cache_capacity_ == 0) return nullptr;
  if (ThreadCache* cache = find_thread_cache(cache_id_, this)) return cache;
  return ThreadCacheDirectory::make(cache_id_, *this);
}

Block* SizeClass::take_cached(ThreadCache& cache) noexcept {
  cache.lock();
  Block* block = nullptr;
  if (cache.count > 0) [[likely]] {
    block = &blocks_[cache.head - 1];
    cache.head = block->next_free_.load(std::memory_order_relaxed);
    --cache.count;
    cache.count_allocated(1);
  } else if (!pool_.exhausted()) {
    std::uint32_t count = 0;
    const std::uint32_t first = pop_batch(cache_capacity_, count);
    if (first != 0) {
      block = &blocks_[first - 1];
      cache.head = block->next_free_.load(std::memory_order_relaxed);
      cache.count = count - 1;
      cache.count_allocated(1);
      flush(cache);
    }
  } else {
    // An allocation failed and waits for a release: no batch is held back from it, one block at a time until a
    // release clears the flag. Checked under the cache's lock, which the failed allocation took to empty this
    // cache after raising the flag: either it emptied what this refill would have cached, or this sees the flag.
    block = pop();
    if (block != nullptr) count_shared_allocation();
  }
  cache.unlock();
  return block;
}

bool SizeClass::put_cached(ThreadCache& cache, Block* block) noexcept {
  cache.lock();
  // An allocation failed: this release goes to the shared list and notifies (the caller). The same lock orders it
  // with the failed allocation's emptying of this cache, so no block is left here while that allocation waits.
  if (pool_.exhausted()) {
    cache.unlock();
    return false;
  }
  if (cache.count == cache_capacity_) [[unlikely]] give_back(cache, cache.count / 2);
  block->next_free_.store(cache.head, std::memory_order_relaxed);
  cache.head = block->index_ + 1;
  ++cache.count;
  cache.count_released();
  cache.unlock();
  return true;
}

// Out of line: put_cached stays small enough to be inlined into every release.
[[gnu::noinline]] void SizeClass::give_back(ThreadCache& cache, std::uint32_t count) noexcept {
  // The older blocks go: those released last stay, their lines likely still in this core's cache.
  const std::uint32_t keep = cache.count - count;
  const std::uint32_t last_kept = last_of(cache.head, keep);
  const std::uint32_t first = blocks_[last_kept - 1].next_free_.load(std::memory_order_relaxed);
  push_segment(first, last_of(first, count));
  cache.count = keep;
  flush(cache);
}

void SizeClass::flush(ThreadCache& cache) noexcept {
  const std::ptrdiff_t balance = cache.balance.load(std::memory_order_relaxed);
  const std::ptrdiff_t peak = std::max(cache.peak, balance);
  cache.balance.store(0, std::memory_order_relaxed);
  cache.peak = 0;
  if (balance == 0 && peak == 0) return;
  // The mark this thread's allocations reached since the last flush, on top of the count as it was then; what
  // other threads' caches have not added yet is missing (or, for their releases, too much), at most a cache each.
  const std::size_t before = used_.fetch_add(static_cast<std::size_t>(balance), std::memory_order_relaxed);
  raise_high_water(before + static_cast<std::size_t>(peak));
}

void SizeClass::steal_cached() noexcept {
  auto lock = ThreadCacheDirectory::lock();
  for (ThreadCache* cache : caches_) cache->claim();
  ThreadCacheDirectory::heavy_barrier();
  for (ThreadCache* cache : caches_) {
    cache->wait_idle();
    const std::uint32_t first = cache->head;
    const std::uint32_t count = cache->count;
    cache->count = 0;
    cache->release_claim();
    if (count > 0) push_segment(first, last_of(first, count));
  }
}

void SizeClass::retire_cache(ThreadCache& cache) noexcept {
  cache.lock();
  if (cache.count > 0) push_segment(cache.head, last_of(cache.head, cache.count));
  cache.count = 0;
  flush(cache);
  cache.unlock();
  cache.size_class.store(nullptr, std::memory_order_relaxed);
  std::erase(caches_, &cache);
}

void SizeClass::count_shared_allocation() noexcept {
  raise_high_water(used_.fetch_add(1, std::memory_order_relaxed) + 1);
}

void SizeClass::raise_high_water(std::size_t used) noexcept {
  // The count is modulo 2^64 and may be "negative" for a moment, when other threads' caches hold allocations they
  // have not added yet: no mark then.
  if (static_cast<std::ptrdiff_t>(used) <= 0) return;
  used = std::min(used, chunk_count_.load(std::memory_order_relaxed) * config_.blocks_per_chunk);
  std::size_t high = high_water_.load(std::memory_order_relaxed);
  while (used > high && !high_water_.compare_exchange_weak(high, used, std::memory_order_relaxed)) {
  }
}

Block* SizeClass::take() noexcept {
  ThreadCache* cache = thread_cache();
  auto take_free = [&]() -> Block* {
    if (cache != nullptr) return take_cached(*cache);
    Block* block = pop();
    if (block != nullptr) count_shared_allocation();
    return block;
  };
  if (Block* block = take_free()) [[likely]] return block;
  if (chunk_count_.load(std::memory_order_relaxed) < config_.max_chunks && grow()) {
    if (Block* block = take_free()) return block;
  }
  // Raise the flag first, then empty the other threads' caches and look once more: a release that raced with the
  // failure is not lost, and from now on releases bypass the caches until one of them notifies.
  pool_.note_exhausted();
  if (cache_capacity_ > 0) steal_cached();
  Block* block = pop();
  if (block != nullptr) count_shared_allocation();
  return block;
}

void SizeClass::prepare(Block* block, std::size_t bytes) noexcept {
  block->state_.store(Block::in_use_state, std::memory_order_relaxed);
  block->owners_.store(1, std::memory_order_relaxed);
  block->offset_ = 0;
  block->size_ = bytes;
  block->next_ = nullptr;
  DAQX_UNPOISON(block->memory_, block->capacity_);
}

Ref SizeClass::allocate(std::size_t bytes) noexcept {
  Block* block = take();
  if (block == nullptr) {
    failed_.fetch_add(1, std::memory_order_relaxed);
    return {};
  }
  prepare(block, bytes);
  return Ref(block);
}

std::size_t SizeClass::allocate(std::size_t bytes, std::span<Ref> out) noexcept {
  for (Ref& ref : out) ref.reset();  // before the cache's lock: a release may go into the same cache
  std::size_t n = 0;
  if (ThreadCache* cache = thread_cache()) {
    // The whole batch under one lock, refilled as often as it takes while the pool is not exhausted.
    cache->lock();
    bool refilled = false;
    while (n < out.size()) {
      if (cache->count == 0) {
        if (pool_.exhausted()) break;
        std::uint32_t count = 0;
        const std::uint32_t first = pop_batch(cache_capacity_, count);
        if (first == 0) break;
        cache->head = first;
        cache->count = count;
        refilled = true;
      }
      Block* block = &blocks_[cache->head - 1];
      cache->head = block->next_free_.load(std::memory_order_relaxed);
      --cache->count;
      prepare(block, bytes);
      out[n++] = Ref(block);
    }
    cache->count_allocated(n);
    if (refilled) flush(*cache);
    cache->unlock();
  }
  // The rest one by one: growth, the other threads' caches, or the shared lists when there is no cache.
  for (; n < out.size(); ++n) {
    Block* block = take();
    if (block == nullptr) {
      failed_.fetch_add(1, std::memory_order_relaxed);
      break;
    }
    prepare(block, bytes);
    out[n] = Ref(block);
  }
  return n;
}

Ref SizeClass::allocate_view(Block* parent, std::byte* memory, std::size_t size) noexcept {
  Ref ref = take_view(memory, size);
  if (!ref) return ref;
  Block* view = ref.head();
  parent->owners_.fetch_add(1, std::memory_order_relaxed);  // the view keeps the memory it shows alive
  view->parent_ = parent;
  view->chunk_ = parent->chunk_;  // the parent's registrations cover the view: it can be sent on as it is
  return ref;
}

Ref SizeClass::allocate_foreign(std::byte* memory, std::size_t size, std::uint64_t token,
                                Chunk* registrations) noexcept {
  Ref ref = take_view(memory, size);
  if (!ref) return ref;
  Block* block = ref.head();
  block->parent_ = nullptr;
  block->chunk_ = registrations != nullptr ? registrations : &no_chunk;
  block->foreign_ = true;
  block->token_ = token;
  return ref;
}

Ref SizeClass::take_view(std::byte* memory, std::size_t size) noexcept {
  Block* view = pop();
  if (view == nullptr) {
    pool_.note_exhausted();  // as for blocks: on_available says when one is back
    view = pop();
    if (view == nullptr) {
      failed_.fetch_add(1, std::memory_order_relaxed);
      return {};
    }
  }
  count_shared_allocation();
  view->state_.store(Block::in_use_state, std::memory_order_relaxed);
  view->owners_.store(1, std::memory_order_relaxed);
  view->memory_ = memory;
  view->capacity_ = size;
  view->offset_ = 0;
  view->size_ = size;
  view->next_ = nullptr;
  return Ref(view);
}

void SizeClass::free(Block* block) noexcept {
  // Load and store, not an exchange: it finds every sequential double release (the bug that happens) and
  // saves a locked instruction on each release; two threads releasing one block at once is already a race.
  if (block->state_.load(std::memory_order_relaxed) != Block::in_use_state) {
    double_releases_.fetch_add(1, std::memory_order_relaxed);
    report_double_release(block->index_, config_.block_size, pool_.name());
    return;
  }
  block->state_.store(Block::free_state, std::memory_order_relaxed);
  if (!views_) DAQX_POISON(block->memory_, block->capacity_);  // a view's memory is its parent's
  // Foreign memory (views only, so normal blocks never look): its owner is told once the descriptor is back, the
  // token read before the descriptor can be reused.
  const bool foreign = views_ && block->foreign_;
  std::uint64_t token = 0;
  if (foreign) {
    token = block->token_;
    block->foreign_ = false;
  }
  // The releasing thread's cache (views have none), unless the pool is flagged exhausted.
  if (ThreadCache* cache = thread_cache(); cache != nullptr && put_cached(*cache, block)) return;
  used_.fetch_sub(1, std::memory_order_relaxed);
  push(block);
  if (foreign) {
    if (ForeignRelease* release = pool_.foreign_release_.load(std::memory_order_acquire)) release->released(token);
  }
  pool_.note_freed();
}

bool SizeClass::grow() noexcept {
  std::lock_guard lock(pool_.config_mutex_);
  // Another thread may have grown this class (or released a block) while we waited for the lock.
  if ((allocation_head_.load(std::memory_order_acquire) & kIndexMask) != 0 ||
      (freed_head_.load(std::memory_order_acquire) & kIndexMask) != 0)
    return true;
  std::size_t index = chunk_count_.load(std::memory_order_relaxed);
  if (index >= config_.max_chunks) return false;
  if (views_) {
    // Descriptors only: they get their memory (a window of another block) when they are handed out.
    for (std::size_t i = 0; i < config_.blocks_per_chunk; ++i) {
      new (blocks_.slot(i)) Block;
      blocks_[i].owner_ = this;
      blocks_[i].index_ = static_cast<std::uint32_t>(i);
    }
    chunk_count_.store(1, std::memory_order_release);
    for (std::size_t i = config_.blocks_per_chunk; i-- > 0;) push(&blocks_[i]);
    return true;
  }
  ChunkMemory memory = pool_.allocator_->allocate(config_.block_size * config_.blocks_per_chunk);
  if (!memory) return false;
  Chunk& chunk = chunks_[index];
  chunk.base = memory.base;
  chunk.bytes = memory.bytes;
  for (std::size_t slot = 0; slot < kMaxRegistrars; ++slot) {
    Registrar* registrar = pool_.registrars_[slot];
    if (registrar == nullptr) continue;
    std::string error = registrar->register_chunk(chunk.base, chunk.bytes, chunk.keys[slot]);
    if (!error.empty()) {
      log(LogLevel::warning, "mempool", "pool '" + pool_.name() + "': " + std::string(registrar->name()) +
                                            " refused a chunk of " + std::to_string(chunk.bytes) + " B: " + error);
      for (std::size_t undo = 0; undo < slot; ++undo)
        if (pool_.registrars_[undo] != nullptr)
          pool_.registrars_[undo]->deregister_chunk(chunk.base, chunk.bytes, chunk.keys[undo]);
      pool_.allocator_->deallocate(memory);
      chunk = Chunk{};
      return false;
    }
  }
  std::size_t first = index * config_.blocks_per_chunk;
  for (std::size_t i = 0; i < config_.blocks_per_chunk; ++i) {
    Block& block = *new (blocks_.slot(first + i)) Block;
    block.memory_ = chunk.base + i * config_.block_size;
    block.owner_ = this;
    block.chunk_ = &chunk;
    block.capacity_ = config_.block_size;
    block.index_ = static_cast<std::uint32_t>(first + i);
  }
  DAQX_POISON(chunk.base, chunk.bytes);
  chunk_count_.store(index + 1, std::memory_order_release);
  // Pushed in reverse so the lowest addresses are handed out first.
  for (std::size_t i = config_.blocks_per_chunk; i-- > 0;) push(&blocks_[first + i]);
  return true;
}

void SizeClass::register_chunks(std::size_t slot, Registrar& registrar) {
  std::size_t chunks = chunk_count_.load(std::memory_order_acquire);
  for (std::size_t c = 0; c < chunks; ++c) {
    std::string error = registrar.register_chunk(chunks_[c].base, chunks_[c].bytes, chunks_[c].keys[slot]);
    if (!error.empty()) {
      for (std::size_t undo = 0; undo < c; ++undo)
        registrar.deregister_chunk(chunks_[undo].base, chunks_[undo].bytes, chunks_[undo].keys[slot]);
      throw std::runtime_error("pool '" + pool_.name() + "': " + std::string(registrar.name()) +
                               " cannot register a chunk of " + std::to_string(chunks_[c].bytes) + " B: " + error);
    }
  }
}

void SizeClass::deregister_chunks(std::size_t slot, Registrar& registrar) noexcept {
  std::size_t chunks = chunk_count_.load(std::memory_order_acquire);
  for (std::size_t c = 0; c < chunks; ++c) {
    registrar.deregister_chunk(chunks_[c].base, chunks_[c].bytes, chunks_[c].keys[slot]);
    chunks_[c].keys[slot] = RegistrationKey{};
  }
}

SizeClassStats SizeClass::stats() const noexcept {
  SizeClassStats stats;
  stats.block_size = config_.block_size;
  stats.chunks = chunk_count_.load(std::memory_order_relaxed);
  stats.max_chunks = config_.max_chunks;
  stats.blocks_total = stats.chunks * config_.blocks_per_chunk;
  std::size_t cached = 0;
  stats.blocks_used = blocks_used(&cached);
  stats.blocks_free = stats.blocks_total - stats.blocks_used;
  stats.blocks_cached = std::min(cached, stats.blocks_free);
  stats.high_water = std::max(high_water_.load(std::memory_order_relaxed), stats.blocks_used);
  stats.failed_allocations = failed_.load(std::memory_order_relaxed);
  stats.double_releases = double_releases_.load(std::memory_order_relaxed);
  return stats;
}

std::size_t SizeClass::blocks_used(std::size_t* cached) const noexcept {
  std::size_t used = used_.load(std::memory_order_relaxed);
  if (cache_capacity_ > 0) {
    auto lock = ThreadCacheDirectory::lock();
    for (ThreadCache* cache : caches_) used += static_cast<std::size_t>(cache->balance.load(std::memory_order_relaxed));
    if (cached != nullptr && !caches_.empty()) {
      for (ThreadCache* cache : caches_) cache->claim();
      ThreadCacheDirectory::heavy_barrier();
      for (ThreadCache* cache : caches_) {
        cache->wait_idle();
        *cached += cache->count;
        cache->release_claim();
      }
    }
  }
  // Read while other threads allocate and release, the sum may be a little off, even "negative" (modulo 2^64).
  if (static_cast<std::ptrdiff_t>(used) < 0) return 0;
  return std::min(used, chunk_count_.load(std::memory_order_relaxed) * config_.blocks_per_chunk);
}

// ---- Pool -------------------------------------------------------------------------------------------

Pool::Pool(PoolConfig config, std::shared_ptr<Allocator> allocator)
    : config_(std::move(config)), allocator_(std::move(allocator)) {
  if (!allocator_) throw std::invalid_argument("pool '" + config_.name + "': no allocator");
  if (config_.classes.empty()) throw std::invalid_argument("pool '" + config_.name + "': no size classes");
  std::sort(config_.classes.begin(), config_.classes.end(),
            [](const SizeClassConfig& a, const SizeClassConfig& b) { return a.block_size < b.block_size; });
  for (std::size_t i = 0; i < config_.classes.size(); ++i) {
    const SizeClassConfig& c = config_.classes[i];
    std::string where = "pool '" + config_.name + "', class of " + std::to_string(c.block_size) + " B: ";
    if (c.block_size < 64 || c.block_size % 64 != 0)
      throw std::invalid_argument(where + "block size must be a positive multiple of 64 (cache line)");
    if (i > 0 && config_.classes[i - 1].block_size == c.block_size)
      throw std::invalid_argument(where + "two classes with the same block size");
    if (c.blocks_per_chunk == 0) throw std::invalid_argument(where + "blocks_per_chunk must be at least 1");
    if (c.max_chunks == 0 || c.initial_chunks > c.max_chunks)
      throw std::invalid_argument(where + "need 1 <= max_chunks and initial_chunks <= max_chunks");
    if (c.blocks_per_chunk * c.max_chunks >= kIndexMask)
      throw std::invalid_argument(where + "more than 2^32-2 blocks in one class");
  }
  if (config_.views >= kIndexMask) throw std::invalid_argument("pool '" + config_.name + "': more than 2^32-2 views");
  for (const SizeClassConfig& c : config_.classes) classes_.push_back(std::make_unique<SizeClass>(*this, c));
  if (config_.views > 0) {
    views_ = std::make_unique<SizeClass>(*this, config_.views, SizeClass::Views{});
    views_->grow();
  }
  for (auto& size_class : classes_) {
    for (std::size_t i = 0; i < size_class->config_.initial_chunks; ++i) {
      if (!size_class->grow())
        throw std::runtime_error("pool '" + config_.name + "': cannot create the initial chunks of the " +
                                 std::to_string(size_class->block_size()) + " B class from " + allocator_->describe());
    }
  }
}

Pool::~Pool() {
  for (auto& size_class : classes_) {
    std::size_t used = size_class->blocks_used();
    if (used != 0)
      report_misuse(Misuse::leak, "pool '" + config_.name + "' destroyed with " + std::to_string(used) + " blocks of " +
                                      std::to_string(size_class->block_size()) + " B still in use");
  }
  if (views_in_use() != 0)
    report_misuse(Misuse::leak, "pool '" + config_.name + "' destroyed with " + std::to_string(views_in_use()) +
                                    " views still in use");
  for (std::size_t slot = 0; slot < kMaxRegistrars; ++slot) remove_registrar(slot);
}

SizeClass* Pool::class_for(std::size_t bytes) const noexcept {
  // A handful of classes: a short scan costs less than anything cleverer.
  for (const auto& size_class : classes_)
    if (bytes <= size_class->block_size()) return size_class.get();
  return nullptr;
}

Ref Pool::allocate(std::size_t bytes) noexcept {
  SizeClass* size_class = class_for(bytes);
  if (size_class == nullptr) return {};
  return size_class->allocate(bytes);
}

std::size_t Pool::allocate(std::size_t bytes, std::span<Ref> out) noexcept {
  SizeClass* size_class = class_for(bytes);
  if (size_class == nullptr) {
    for (Ref& ref : out) ref.reset();
    return 0;
  }
  return size_class->allocate(bytes, out);
}

Ref Pool::allocate_chain(std::size_t bytes) noexcept {
  if (bytes <= max_block_size()) return allocate(bytes);
  SizeClass& largest = *classes_.back();
  Ref head;
  Block* tail = nullptr;
  std::size_t remaining = bytes;
  while (remaining > 0) {
    std::size_t piece = std::min(remaining, largest.block_size());
    Ref next = allocate(piece);
    if (!next) return {};  // head's destructor gives back what was taken
    Block* block = std::move(next).into_raw();
    if (tail == nullptr) {
      head = Ref::from_raw(block);
    } else {
      tail->next_ = block;
    }
    tail = block;
    remaining -= piece;
  }
  return head;
}

std::size_t Pool::add_registrar(Registrar& registrar) {
  std::lock_guard lock(config_mutex_);
  std::size_t slot = 0;
  while (slot < kMaxRegistrars && registrars_[slot] != nullptr) ++slot;
  if (slot == kMaxRegistrars)
    throw std::runtime_error("pool '" + config_.name + "': more than " + std::to_string(kMaxRegistrars) + " registrars");
  register_at(registrar, slot);
  return slot;
}

void Pool::add_registrar(Registrar& registrar, std::size_t slot) {
  std::lock_guard lock(config_mutex_);
  if (slot >= kMaxRegistrars)
    throw std::runtime_error("pool '" + config_.name + "': registrar slot " + std::to_string(slot) + " out of range");
  if (registrars_[slot] != nullptr)
    throw std::runtime_error("pool '" + config_.name + "': registrar slot " + std::to_string(slot) + " is taken");
  register_at(registrar, slot);
}

void Pool::register_at(Registrar& registrar, std::size_t slot) {
  for (std::size_t c = 0; c < classes_.size(); ++c) {
    try {
      classes_[c]->register_chunks(slot, registrar);
    } catch (...) {
      for (std::size_t undo = 0; undo < c; ++undo) classes_[undo]->deregister_chunks(slot, registrar);
      throw;
    }
  }
  registrars_[slot] = &registrar;
}

void Pool::remove_registrar(std::size_t slot) noexcept {
  std::lock_guard lock(config_mutex_);
  if (slot >= kMaxRegistrars || registrars_[slot] == nullptr) return;
  for (auto& size_class : classes_) size_class->deregister_chunks(slot, *registrars_[slot]);
  registrars_[slot] = nullptr;
}

void Pool::on_available(std::function<void()> callback) {
  std::lock_guard lock(config_mutex_);
  on_available_ = std::move(callback);
}

void Pool::notify() noexcept {
  // The callback is set at configuration time, before blocks circulate, so reading it here needs no lock.
  if (on_available_) on_available_();
}

PoolStats Pool::stats() const {
  PoolStats stats;
  stats.name = config_.name;
  stats.allocator = allocator_->describe();
  stats.views_total = config_.views;
  stats.views_used = views_in_use();
  for (const auto& size_class : classes_) {
    stats.classes.push_back(size_class->stats());
    stats.bytes_reserved += stats.classes.back().chunks * size_class->config_.blocks_per_chunk * size_class->block_size();
  }
  return stats;
}

std::vector<Chunk> Pool::chunks() const {
  std::vector<Chunk> list;
  for (const auto& size_class : classes_) {
    std::size_t count = size_class->chunk_count_.load(std::memory_order_acquire);
    for (std::size_t c = 0; c < count; ++c) list.push_back(size_class->chunks_[c]);
  }
  return list;
}

Ref Pool::wrap_foreign(std::byte* memory, std::size_t size, std::uint64_t token, Chunk* registrations) noexcept {
  if (!views_) return {};
  return views_->allocate_foreign(memory, size, token, registrations);
}

std::size_t Pool::views_in_use() const noexcept {
  return views_ ? views_->used_.load(std::memory_order_relaxed) : 0;
}

std::size_t Pool::blocks_in_use() const noexcept {
  std::size_t used = 0;
  for (const auto& size_class : classes_) used += size_class->blocks_used();
  return used;
}

std::size_t PoolStats::blocks_used() const noexcept {
  std::size_t used = 0;
  for (const auto& c : classes) used += c.blocks_used;
  return used;
}

std::uint64_t PoolStats::failed_allocations() const noexcept {
  std::uint64_t failed = 0;
  for (const auto& c : classes) failed += c.failed_allocations;
  return failed;
}

}  // namespace daqx::mem
