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

// Whether the owners' side of the caches' guard needs a fence of its own (membarrier is not available), set before
// the first cache is made.
extern bool thread_cache_owner_fence;

// Free blocks of one class kept by one thread (a "magazine"), linked through Block::next_free_ like the shared
// lists. The owning thread takes and puts blocks between lock() and unlock(): plain stores and loads on a line
// only it writes, no locked instruction (a locked one costs 15-20 ns on the machines here, more than the rest of
// an allocation). Another thread touches the cache only to look into it or empty it (an allocation that found
// its class exhausted, SizeClass::steal_cached; the statistics), holding the directory's mutex: it claims the
// cache, makes every thread of the process pass a full barrier (ThreadCacheDirectory::heavy_barrier, membarrier),
// then waits until the owner is out. An asymmetric Dekker: either the owner sees the claim and waits, or the
// claimer sees the owner inside and waits for it to leave.
struct alignas(64) ThreadCache {
  explicit ThreadCache(SizeClass* owner) noexcept : size_class(owner) {}

  // The owner's side.
  void lock() noexcept {
    for (;;) {
      busy.store(true, std::memory_order_relaxed);
      if (thread_cache_owner_fence) std::atomic_thread_fence(std::memory_order_seq_cst);
      else std::atomic_signal_fence(std::memory_order_seq_cst);  // the claimer's membarrier is the fence
      if (!claimed.load(std::memory_order_acquire)) return;
      busy.store(false, std::memory_order_release);
      while (claimed.load(std::memory_order_acquire)) std::this_thread::yield();
    }
  }
  void unlock() noexcept { busy.store(false, std::memory_order_release); }
  // The other side, under the directory's mutex: claim(), ThreadCacheDirectory::heavy_barrier() (once for
  // several caches), wait_idle(), then the cache is the claimer's until release_claim().
  void claim() noexcept { claimed.store(true, std::memory_order_relaxed); }
  void wait_idle() noexcept {
    while (busy.load(std::memory_order_acquire)) std::this_thread::yield();
  }
  void release_claim() noexcept { claimed.store(false, std::memory_order_release); }
  // Owner only: its own counter, so a load and a store, no locked instruction.
  void count_allocated(std::size_t n) noexcept {
    const std::ptrdiff_t now = balance.load(std::memory_order_relaxed) + static_cast<std::ptrdiff_t>(n);
    balance.store(now, std::memory_order_relaxed);
    if (now > peak) peak = now;
  }
  void count_released() noexcept { balance.store(balance.load(std::memory_order_relaxed) - 1, std::memory_order_relaxed); }

  std::atomic<bool> busy{false};     // written by the owner only
  std::atomic<bool> claimed{false};  // written by claimers only, under the directory's mutex
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
  // Every thread of the process passes a full memory barrier (the claimers' side of ThreadCache's guard).
  static void heavy_barrier() noexcept;
  static std::size_t acquire_id();  // a small integer, reused after release_id
  static void release_id(std::size_t id) noexcept;
  // Makes this thread's cache for size_class and registers it with the class; null when this thread is exiting
  // (its caches were given back already) or memory is short: the caller then uses the shared lists.
  static ThreadCache* make(std::size_t id, SizeClass& size_class) noexcept;
  // On thread exit: every cache goes back to its class (if still there) and is freed.
  static void close_thread() noexcept;
};

}  // namespace daqx::mem
