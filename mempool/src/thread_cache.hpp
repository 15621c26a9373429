// A thread's cache of free blocks of one size class, and how a thread finds its cache of a class in a few ns.
// Private to mempool: SizeClass (pool.cpp) is its only user.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <thread>

namespace daqx::mem {

class SizeClass;

// Free blocks of one class kept by one thread (a "magazine"), linked through Block::next_free_ like the shared
// lists. The owning thread takes and puts blocks under `busy`, a lock on a line only it writes in the normal
// case (one uncontended exchange per operation); another thread takes it only to empty the cache: an allocation
// that found its class exhausted (SizeClass::steal_cached) or the class going away. Those hold the directory's
// mutex (ThreadCacheDirectory::lock), never while holding a cache's lock, so they cannot deadlock with an owner.
struct alignas(64) ThreadCache {
  explicit ThreadCache(SizeClass* owner) noexcept : size_class(owner) {}

  void lock() noexcept {
    while (busy.exchange(true, std::memory_order_acquire)) {
      while (busy.load(std::memory_order_relaxed)) std::this_thread::yield();
    }
  }
  void unlock() noexcept { busy.store(false, std::memory_order_release); }
  // Owner only: its own counter, so a load and a store, no locked instruction.
  void count_allocated(std::size_t n) noexcept {
    const std::ptrdiff_t now = balance.load(std::memory_order_relaxed) + static_cast<std::ptrdiff_t>(n);
    balance.store(now, std::memory_order_relaxed);
    if (now > peak) peak = now;
  }
  void count_released() noexcept { balance.store(balance.load(std::memory_order_relaxed) - 1, std::memory_order_relaxed); }

  std::atomic<bool> busy{false};
  std::uint32_t head = 0;   // index + 1 of the first cached block; the rest follow through next_free_
  std::uint32_t count = 0;  // blocks cached: the list is only ever walked this far
  // Blocks allocated minus blocks released on the owning thread since it last added them to SizeClass::used_
  // (when the cache refills or gives back): read by stats() under the directory's mutex.
  std::atomic<std::ptrdiff_t> balance{0};
  std::ptrdiff_t peak = 0;  // the most balance reached since then, for the high-water mark
  // The class this cache belongs to; set to null (under the directory's mutex) when the class goes, after which
  // the owning thread never touches the class through it again.
  std::atomic<SizeClass*> size_class;
};

// Where this thread finds its caches: slot i for the class whose cache id is i. Trivial, constant-initialised and
// initial-exec, so reading it is one TLS-relative load (no init guard, no __tls_get_addr).
struct ThreadCacheSlots {
  ThreadCache** data = nullptr;
  std::size_t size = 0;
};
extern thread_local constinit ThreadCacheSlots thread_cache_slots __attribute__((tls_model("initial-exec")));

// This thread's cache of size_class (cache id `id`), or null when it has none yet.
inline ThreadCache* find_thread_cache(std::size_t id, const SizeClass* size_class) noexcept {
  const ThreadCacheSlots& slots = thread_cache_slots;
  if (id >= slots.size) return nullptr;
  ThreadCache* cache = slots.data[id];
  // A slot may hold the cache of a class that is gone and whose id a newer class has now (size_class is then null).
  if (cache == nullptr || cache->size_class.load(std::memory_order_relaxed) != size_class) return nullptr;
  return cache;
}

// The slow paths, under one process-wide mutex: cache ids, making a thread's cache, giving a thread's caches back
// when it exits, and (SizeClass's) the list of the caches of each class.
class ThreadCacheDirectory {
 public:
  static std::unique_lock<std::mutex> lock();
  static std::size_t acquire_id();  // a small integer, reused after release_id
  static void release_id(std::size_t id) noexcept;
  // Makes this thread's cache for size_class and registers it with the class; null when this thread is exiting
  // (its caches were given back already) or memory is short: the caller then uses the shared lists.
  static ThreadCache* make(std::size_t id, SizeClass& size_class) noexcept;
  // On thread exit: every cache goes back to its class (if still there) and is freed.
  static void close_thread() noexcept;
};

}  // namespace daqx::mem
