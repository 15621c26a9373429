// The directory of threads' block caches: cache ids, the making of a thread's caches and their return at exit.
#include "thread_cache.hpp"

#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <new>
#include <vector>

#include "daqx/mempool/pool.hpp"

namespace daqx::mem {

constinit thread_local ThreadCacheSlots thread_cache_slots __attribute__((tls_model("initial-exec")));
bool thread_cache_owner_fence = false;

namespace {

struct Directory {
  // Before any cache exists (the first size class is made): the owners' fence is decided once.
  Directory() {
    expedited = syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0;
    thread_cache_owner_fence = !expedited;
  }
  std::mutex mutex;
  std::vector<bool> ids_in_use;
  bool expedited = false;
};

// Never destroyed: size classes of static pools and threads may go after static destructors have run.
Directory& directory() {
  static Directory& instance = *new Directory;
  return instance;
}

// The caches this thread made; its destructor (thread exit) gives them back.
struct ThreadCacheSet {
  std::vector<ThreadCache*> slots;
  ~ThreadCacheSet() { ThreadCacheDirectory::close_thread(); }
};
thread_local ThreadCacheSet thread_caches;
// Set once this thread's caches were given back: blocks released later (by other thread_local destructors) go to
// the shared lists.
thread_local constinit bool thread_caches_closed = false;

}  // namespace

std::unique_lock<std::mutex> ThreadCacheDirectory::lock() { return std::unique_lock(directory().mutex); }

void ThreadCacheDirectory::heavy_barrier() noexcept {
  // Without membarrier the owners fence themselves, and a fence here completes the pair.
  if (!directory().expedited || syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) != 0)
    std::atomic_thread_fence(std::memory_order_seq_cst);
}

std::size_t ThreadCacheDirectory::acquire_id() {
  Directory& d = directory();
  std::lock_guard lock(d.mutex);
  for (std::size_t id = 0; id < d.ids_in_use.size(); ++id) {
    if (!d.ids_in_use[id]) {
      d.ids_in_use[id] = true;
      return id;
    }
  }
  d.ids_in_use.push_back(true);
  return d.ids_in_use.size() - 1;
}

void ThreadCacheDirectory::release_id(std::size_t id) noexcept {
  Directory& d = directory();
  std::lock_guard lock(d.mutex);
  d.ids_in_use[id] = false;
}

ThreadCache* ThreadCacheDirectory::make(std::size_t id, SizeClass& size_class) noexcept {
  if (thread_caches_closed) return nullptr;
  try {
    ThreadCacheSet& set = thread_caches;
    std::lock_guard lock(directory().mutex);
    if (set.slots.size() <= id) set.slots.resize(id + 1, nullptr);
    ThreadCache*& slot = set.slots[id];
    // A cache left by a class that is gone (its id is reused): nobody else knows it any more.
    if (slot != nullptr && slot->size_class.load(std::memory_order_relaxed) == nullptr) {
      delete slot;
      slot = nullptr;
    }
    if (slot == nullptr) {
      auto* cache = new ThreadCache(&size_class);
      size_class.caches_.push_back(cache);
      slot = cache;
    }
    thread_cache_slots = {set.slots.data(), set.slots.size()};
    return slot;
  } catch (...) {  // std::bad_alloc: this thread uses the shared lists
    return nullptr;
  }
}

void ThreadCacheDirectory::close_thread() noexcept {
  thread_caches_closed = true;
  thread_cache_slots = {};
  std::lock_guard lock(directory().mutex);
  for (ThreadCache* cache : thread_caches.slots) {
    if (cache == nullptr) continue;
    if (SizeClass* size_class = cache->size_class.load(std::memory_order_relaxed)) size_class->retire_cache(*cache);
    delete cache;
  }
  thread_caches.slots.clear();
}

}  // namespace daqx::mem
