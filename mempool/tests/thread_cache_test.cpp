// Threads' caches of free blocks: taken from and filled on the thread's own operations, counted as free, given back
// when the thread exits, emptied by an allocation that would otherwise fail, safe when the pool goes first.
#include <catch2/catch.hpp>

#include <atomic>
#include <condition_variable>
#include <cstring>
#include <memory>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "daqx/mempool/pool.hpp"
#include "misuse_capture.hpp"

using namespace daqx::mem;

namespace {

// One class of 256 B blocks, `blocks` of them and no growth; caches of up to cache_blocks (and a quarter of the
// class) per thread.
PoolConfig one_class(std::size_t blocks, std::size_t cache_blocks) {
  PoolConfig config;
  config.name = "test/cache";
  config.classes.push_back({256, blocks, 1, 1});
  config.thread_cache_blocks = cache_blocks;
  return config;
}

// Runs fn on a thread of its own and waits for the thread to end (its thread_local caches with it).
template <typename Fn>
void on_own_thread(Fn&& fn) {
  std::thread thread(std::forward<Fn>(fn));
  thread.join();
}

// Lets two threads take turns: each waits for its step, does it and hands over the next.
class Turns {
 public:
  void wait_for(int step) {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return step_ == step; });
  }
  void go_to(int step) {
    {
      std::lock_guard lock(mutex_);
      step_ = step;
    }
    changed_.notify_all();
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  int step_ = 0;
};

}  // namespace

TEST_CASE("a block released on a thread is the next one that thread allocates, and cached blocks count as free",
          "[pool][cache]") {
  Pool pool(one_class(64, 32), std::make_shared<HeapAllocator>());
  Ref first = pool.allocate(100);
  REQUIRE(first);
  std::byte* memory = first.head()->memory();
  first.reset();
  SizeClassStats stats = pool.stats().classes[0];
  CHECK(stats.blocks_used == 0);
  CHECK(stats.blocks_free == 64);
  CHECK(stats.blocks_cached == 16);  // the first allocation took a quarter of the class, all back now
  Ref again = pool.allocate(100);
  CHECK(again.head()->memory() == memory);  // from the thread's cache, not the shared lists

  std::vector<Ref> held;
  for (int i = 0; i < 40; ++i) held.push_back(pool.allocate(256));
  stats = pool.stats().classes[0];
  CHECK(stats.blocks_used == 41);
  CHECK(stats.blocks_free == 23);
  CHECK(stats.high_water == 41);
  held.clear();
  again.reset();
  stats = pool.stats().classes[0];
  CHECK(stats.blocks_used == 0);
  CHECK(stats.blocks_free == 64);
  CHECK(stats.blocks_cached <= 16);
  CHECK(stats.high_water == 41);
  CHECK(pool.blocks_in_use() == 0);
}

TEST_CASE("without caches a released block goes to the shared lists", "[pool][cache]") {
  Pool pool(one_class(64, 0), std::make_shared<HeapAllocator>());
  Ref first = pool.allocate(100);
  std::byte* memory = first.head()->memory();
  first.reset();
  CHECK(pool.stats().classes[0].blocks_cached == 0);
  Ref again = pool.allocate(100);
  CHECK(again.head()->memory() != memory);  // the allocation list still had the others
  again.reset();
  CHECK(pool.stats().classes[0].blocks_free == 64);
}

TEST_CASE("one thread allocates and another releases: allocation takes back what the idle releaser cached",
          "[pool][cache][threads]") {
  constexpr std::size_t kBlocks = 16;  // caches of 4
  Pool pool(one_class(kBlocks, 32), std::make_shared<HeapAllocator>());
  std::vector<Ref> batch(kBlocks);
  Turns turns;
  constexpr int kRounds = 200;
  std::atomic<int> failures{0};
  std::thread releaser([&] {
    for (int round = 0; round < kRounds; ++round) {
      turns.wait_for(2 * round + 1);
      for (Ref& ref : batch) ref.reset();  // into this thread's cache, half of it back when full
      turns.go_to(2 * round + 2);
    }
  });
  for (int round = 0; round < kRounds; ++round) {
    turns.wait_for(2 * round);
    // Every block is free (some in the releaser's cache, which is idle now): each allocation must succeed.
    std::set<std::byte*> distinct;
    for (Ref& ref : batch) {
      ref = pool.allocate(256);
      if (!ref) {
        failures.fetch_add(1);
        continue;
      }
      std::memset(ref.data(), round & 0xff, 256);
      distinct.insert(ref.data());
    }
    REQUIRE(distinct.size() == kBlocks - static_cast<std::size_t>(failures.load()));
    turns.go_to(2 * round + 1);
  }
  turns.wait_for(2 * kRounds);
  releaser.join();
  CHECK(failures == 0);
  SizeClassStats stats = pool.stats().classes[0];
  CHECK(stats.blocks_used == 0);
  CHECK(stats.blocks_free == kBlocks);
  CHECK(stats.double_releases == 0);
}

TEST_CASE("blocks allocated on one thread and released on another return through the caches without loss",
          "[pool][cache][threads]") {
  constexpr std::size_t kBlocks = 64;
  constexpr int kFrames = 100000;
  Pool pool(one_class(kBlocks, 32), std::make_shared<HeapAllocator>());
  // A bounded ring of block pointers (loans) between the two: the thing under test is the pool, not a queue.
  std::vector<std::atomic<Block*>> ring(kBlocks);
  for (auto& slot : ring) slot.store(nullptr);
  std::atomic<long> corrupt{0};
  std::thread releaser([&] {
    for (int i = 0; i < kFrames; ++i) {
      std::atomic<Block*>& slot = ring[static_cast<std::size_t>(i) % kBlocks];
      Block* block;
      while ((block = slot.exchange(nullptr, std::memory_order_acquire)) == nullptr) std::this_thread::yield();
      Ref ref = Ref::from_raw(block);
      if (static_cast<int>(ref.data()[0]) != (i & 0xff)) corrupt.fetch_add(1);
    }
  });
  long backoffs = 0;
  for (int i = 0; i < kFrames; ++i) {
    Ref ref = pool.allocate(256);
    while (!ref) {  // only while the ring holds blocks the releaser has not taken yet
      ++backoffs;
      std::this_thread::yield();
      ref = pool.allocate(256);
    }
    std::memset(ref.data(), i & 0xff, 256);
    std::atomic<Block*>& slot = ring[static_cast<std::size_t>(i) % kBlocks];
    while (slot.load(std::memory_order_relaxed) != nullptr) std::this_thread::yield();
    slot.store(std::move(ref).into_raw(), std::memory_order_release);
  }
  releaser.join();
  INFO("allocator backed off " << backoffs << " times");
  CHECK(corrupt == 0);
  SizeClassStats stats = pool.stats().classes[0];
  CHECK(stats.blocks_used == 0);
  CHECK(stats.blocks_free == kBlocks);
  CHECK(stats.double_releases == 0);
  CHECK(stats.high_water <= kBlocks);
}

TEST_CASE("a thread that exits gives its cached blocks back", "[pool][cache][threads]") {
  Pool pool(one_class(64, 32), std::make_shared<HeapAllocator>());
  on_own_thread([&] {
    std::vector<Ref> held;
    for (int i = 0; i < 10; ++i) held.push_back(pool.allocate(256));
    held.clear();
    CHECK(pool.stats().classes[0].blocks_cached == 16);
  });
  SizeClassStats stats = pool.stats().classes[0];
  CHECK(stats.blocks_cached == 0);
  CHECK(stats.blocks_used == 0);
  CHECK(stats.high_water == 10);
  // All 64 from this thread, none of them from a cache of the thread that is gone.
  std::vector<Ref> all;
  for (int i = 0; i < 64; ++i) all.push_back(pool.allocate(256));
  for (const Ref& ref : all) CHECK(ref);
  CHECK(pool.stats().classes[0].failed_allocations == 0);
}

TEST_CASE("a pool may go before or after a thread that has a cache of it", "[pool][cache][threads]") {
  daqx::test::MisuseCapture misuse;
  SECTION("the pool goes first: the thread's later work and exit touch nothing of it") {
    auto pool = std::make_unique<Pool>(one_class(64, 32), std::make_shared<HeapAllocator>());
    Turns turns;
    std::thread user([&] {
      pool->allocate(256).reset();  // a cache of the pool, holding blocks
      turns.go_to(1);
      turns.wait_for(2);
      // A new pool, likely with the same cache id (and perhaps the same address) as the one that went.
      Pool next(one_class(64, 32), std::make_shared<HeapAllocator>());
      std::vector<Ref> held;
      for (int i = 0; i < 64; ++i) held.push_back(next.allocate(256));
      for (const Ref& ref : held) CHECK(ref);
      held.clear();
      CHECK(next.stats().classes[0].blocks_used == 0);
    });
    turns.wait_for(1);
    pool.reset();
    turns.go_to(2);
    user.join();
  }
  SECTION("the thread goes first: the pool gets every block back") {
    Pool pool(one_class(64, 32), std::make_shared<HeapAllocator>());
    on_own_thread([&] { pool.allocate(256).reset(); });
    CHECK(pool.stats().classes[0].blocks_free == 64);
  }
  CHECK(misuse.count(Misuse::leak) == 0);
}

TEST_CASE("with caches, exhaustion notifies on the first release, also from another thread's cache",
          "[pool][cache]") {
  Pool pool(one_class(16, 32), std::make_shared<HeapAllocator>());
  std::atomic<int> notified{0};
  pool.on_available([&] { notified.fetch_add(1); });
  std::vector<Ref> held;
  for (int i = 0; i < 16; ++i) held.push_back(pool.allocate(256));
  CHECK_FALSE(pool.allocate(256));
  CHECK(notified == 0);
  // Released on another thread: the release must not stay in that thread's cache, it notifies.
  on_own_thread([&] { held.back().reset(); });
  CHECK(notified == 1);
  held.pop_back();
  Ref back = pool.allocate(256);
  CHECK(back);
  CHECK_FALSE(pool.allocate(256));
  held.front().reset();  // on this thread, with a cache of the class
  CHECK(notified == 2);
  CHECK(pool.allocate(256));
  CHECK(pool.stats().classes[0].failed_allocations == 2);
}

TEST_CASE("a block released twice is reported though the first release went into a cache", "[pool][cache]") {
  daqx::test::MisuseCapture misuse;
  Pool pool(one_class(64, 32), std::make_shared<HeapAllocator>());
  Block* loaned = pool.allocate(256).into_raw();
  Ref::from_raw(loaned).reset();
  Ref::from_raw(loaned).reset();
  CHECK(misuse.count(Misuse::double_release) == 1);
  // The cache holds the block once: the next two allocations are two different blocks.
  Ref a = pool.allocate(256);
  Ref b = pool.allocate(256);
  CHECK(a.data() != b.data());
  CHECK(pool.stats().classes[0].double_releases == 1);
}

TEST_CASE("a batch allocation fills what the class has and leaves the rest empty", "[pool][cache]") {
  for (std::size_t cache_blocks : {std::size_t{32}, std::size_t{0}}) {
    INFO("thread_cache_blocks " << cache_blocks);
    Pool pool(one_class(64, cache_blocks), std::make_shared<HeapAllocator>());
    std::vector<Ref> batch(80);
    CHECK(pool.allocate(100, std::span<Ref>(batch.data(), 10)) == 10);
    std::set<std::byte*> distinct;
    for (std::size_t i = 0; i < 10; ++i) {
      REQUIRE(batch[i]);
      CHECK(batch[i].size() == 100);
      distinct.insert(batch[i].data());
    }
    CHECK(distinct.size() == 10);
    CHECK(pool.stats().classes[0].blocks_used == 10);
    // The slots already holding blocks give them back first: 64 blocks for 80 slots.
    CHECK(pool.allocate(256, batch) == 64);
    for (std::size_t i = 0; i < 64; ++i) CHECK(batch[i]);
    for (std::size_t i = 64; i < 80; ++i) CHECK_FALSE(batch[i]);
    CHECK(pool.stats().classes[0].failed_allocations == 1);
    CHECK(pool.stats().classes[0].high_water == 64);
    CHECK(pool.allocate(4096, batch) == 0);  // no class that large: all empty
    CHECK(pool.stats().classes[0].blocks_used == 0);
    CHECK(pool.allocate(256, std::span<Ref>(batch.data(), 3)) == 3);
    batch.clear();
    CHECK(pool.stats().classes[0].blocks_free == 64);
  }
}
