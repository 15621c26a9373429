// Pools: size classes, growth by whole chunks, soft exhaustion with notification, statistics.
#include <catch2/catch.hpp>

#include <atomic>
#include <cstring>
#include <fstream>
#include <set>
#include <vector>

#include <unistd.h>

#include "daqx/mempool/pool.hpp"

using namespace daqx::mem;

namespace {

PoolConfig two_classes(std::size_t max_chunks) {
  PoolConfig config;
  config.name = "test/pool";
  config.classes.push_back({4096, 4, 1, max_chunks});
  config.classes.push_back({256, 8, 1, max_chunks});  // out of order on purpose: the pool sorts
  return config;
}

}  // namespace

TEST_CASE("allocate picks the smallest size class that holds the request", "[pool]") {
  Pool pool(two_classes(1), std::make_shared<HeapAllocator>());
  Ref small = pool.allocate(100);
  Ref large = pool.allocate(1000);
  REQUIRE(small);
  REQUIRE(large);
  CHECK(small.capacity() == 256);
  CHECK(small.size() == 100);
  CHECK(small.offset() == 0);
  CHECK(large.capacity() == 4096);
  CHECK(large.size() == 1000);
}

TEST_CASE("a request larger than the largest class fails softly", "[pool]") {
  Pool pool(two_classes(1), std::make_shared<HeapAllocator>());
  Ref too_big = pool.allocate(4097);
  CHECK_FALSE(too_big);
}

TEST_CASE("blocks are cache-line aligned and do not overlap", "[pool]") {
  Pool pool(two_classes(1), std::make_shared<HeapAllocator>());
  std::vector<Ref> refs;
  for (int i = 0; i < 8; ++i) refs.push_back(pool.allocate(256));
  for (std::size_t i = 0; i < refs.size(); ++i) {
    CHECK(reinterpret_cast<std::uintptr_t>(refs[i].data()) % 64 == 0);
    std::memset(refs[i].data(), static_cast<int>(i), 256);
  }
  for (std::size_t i = 0; i < refs.size(); ++i)
    for (std::size_t b = 0; b < 256; ++b) REQUIRE(static_cast<int>(refs[i].data()[b]) == static_cast<int>(i));
}

TEST_CASE("a class grows by whole chunks up to its limit, then exhaustion is soft", "[pool]") {
  Pool pool(two_classes(3), std::make_shared<HeapAllocator>());
  REQUIRE(pool.stats().classes[1].chunks == 1);
  std::vector<Ref> held;
  for (int i = 0; i < 4; ++i) held.push_back(pool.allocate(4096));
  CHECK(pool.stats().classes[1].chunks == 1);
  held.push_back(pool.allocate(4096));  // fifth block: needs a second chunk
  CHECK(pool.stats().classes[1].chunks == 2);
  CHECK(pool.stats().classes[1].blocks_total == 8);
  for (int i = 0; i < 7; ++i) held.push_back(pool.allocate(4096));
  CHECK(pool.stats().classes[1].chunks == 3);
  CHECK(pool.stats().classes[1].blocks_used == 12);
  Ref refused = pool.allocate(4096);
  CHECK_FALSE(refused);
  CHECK(pool.stats().classes[1].failed_allocations == 1);
  CHECK(pool.stats().classes[1].high_water == 12);
}

TEST_CASE("a class's limit costs address space only: the descriptors of chunks never made take no memory",
          "[pool]") {
  // 2^26 descriptors, several GB if they were all built when the pool is made (as they were once: hundreds of MB
  // and most of the start-up time of every executive). Only the first chunk's and the second's may be resident.
  auto resident_bytes = [] {
    std::ifstream statm("/proc/self/statm");
    std::size_t pages = 0, resident = 0;
    statm >> pages >> resident;
    return resident * static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  };
  PoolConfig config;
  config.name = "test/roomy";
  config.classes.push_back({64, 1024, 1, std::size_t{1} << 16});
  const std::size_t before = resident_bytes();
  Pool pool(config, std::make_shared<HeapAllocator>());
  std::vector<Ref> held;
  for (int i = 0; i < 1025; ++i) held.push_back(pool.allocate(64));  // the last one needs a second chunk
  REQUIRE(held.back());
  CHECK(pool.stats().classes[0].chunks == 2);
  CHECK(resident_bytes() - before < (std::size_t{16} << 20));
  held.clear();
  CHECK(pool.stats().classes[0].blocks_used == 0);
}

TEST_CASE("a pool driven to exhaustion notifies once when blocks come back, and recovers fully", "[pool]") {
  Pool pool(two_classes(1), std::make_shared<HeapAllocator>());
  std::atomic<int> notified{0};
  pool.on_available([&] { notified.fetch_add(1); });
  std::vector<Ref> held;
  for (;;) {
    Ref ref = pool.allocate(256);
    if (!ref) break;
    held.push_back(std::move(ref));
  }
  CHECK(held.size() == 8);
  CHECK(notified == 0);
  CHECK_FALSE(pool.allocate(256));  // still exhausted: a second failure, same episode
  held.pop_back();
  CHECK(notified == 1);
  held.pop_back();
  CHECK(notified == 1);  // one notification per episode
  held.clear();
  PoolStats stats = pool.stats();
  CHECK(stats.classes[0].blocks_used == 0);
  CHECK(stats.classes[0].blocks_free == 8);
  CHECK(stats.classes[0].failed_allocations == 2);
  for (int i = 0; i < 8; ++i) held.push_back(pool.allocate(256));
  for (auto& ref : held) CHECK(ref);
}

TEST_CASE("blocks released while others are still free come back once those are used up, each exactly once",
          "[pool]") {
  // Releases go onto the freed list; allocations pop the allocation list and take the freed list whole when it
  // runs dry (SizeClass::take_freed). Nothing may be lost or handed out twice on the way.
  PoolConfig config;
  config.name = "test/lists";
  config.classes.push_back({256, 16, 1, 1});
  Pool pool(config, std::make_shared<HeapAllocator>());
  std::vector<Ref> held;
  for (int i = 0; i < 8; ++i) held.push_back(pool.allocate(256));  // 8 still on the allocation list
  held.erase(held.begin(), held.begin() + 4);                      // 4 onto the freed list
  std::set<std::byte*> out;
  for (const Ref& ref : held) out.insert(ref.data());
  std::vector<Ref> more;
  for (int i = 0; i < 12; ++i) {
    Ref ref = pool.allocate(256);
    REQUIRE(ref);
    CHECK(out.insert(ref.data()).second);  // not a block that is out already
    more.push_back(std::move(ref));
  }
  CHECK_FALSE(pool.allocate(256));
  CHECK(pool.stats().classes[0].blocks_used == 16);
  more.clear();
  held.clear();
  CHECK(pool.stats().classes[0].blocks_free == 16);
}

TEST_CASE("statistics describe every class and the allocator", "[pool]") {
  Pool pool(PoolConfig::geometric("test/geo", 256, 8u << 20, 8u << 20, 16u << 20), std::make_shared<HeapAllocator>());
  PoolStats stats = pool.stats();
  CHECK(stats.name == "test/geo");
  CHECK(stats.allocator == "heap");
  REQUIRE(stats.classes.size() == 16);  // 256 B .. 8 MiB
  CHECK(stats.classes.front().block_size == 256);
  CHECK(stats.classes.back().block_size == (8u << 20));
  CHECK(stats.classes.back().max_chunks == 2);
  CHECK(stats.bytes_reserved == 16 * (8u << 20));
  CHECK(pool.max_block_size() == (8u << 20));
}

TEST_CASE("bad pool configurations are refused with the reason", "[pool]") {
  auto heap = std::make_shared<HeapAllocator>();
  PoolConfig config;
  config.name = "bad";
  CHECK_THROWS_WITH(Pool(config, heap), Catch::Contains("no size classes"));
  config.classes = {{100, 1, 1, 1}};
  CHECK_THROWS_WITH(Pool(config, heap), Catch::Contains("multiple of 64"));
  config.classes = {{128, 1, 2, 1}};
  CHECK_THROWS_WITH(Pool(config, heap), Catch::Contains("initial_chunks <= max_chunks"));
  config.classes = {{128, 1, 1, 1}, {128, 2, 1, 1}};
  CHECK_THROWS_WITH(Pool(config, heap), Catch::Contains("same block size"));
}
