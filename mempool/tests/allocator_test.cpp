// Chunk allocators: heap, huge pages with a logged fallback, and NUMA binding checked with the kernel.
#include <catch2/catch.hpp>

#include <numa.h>
#include <numaif.h>
#include <sys/mman.h>

#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "../../tests/support/process.hpp"
#include "daqx/mempool/allocator.hpp"
#include "daqx/services/log.hpp"
#include "daqx/mempool/pool.hpp"

using namespace daqx::mem;

namespace {

// libnuma needs the kernel's NUMA calls (a container's seccomp profile may refuse get_mempolicy): where they are
// missing the NUMA cases are skipped, or fail where DAQX_TRANSPORT_REQUIRE=1 (CI).
void skip_unless_numa_available() {
  if (numa_available() < 0)
    daqx::test::skip_for_environment("DAQX_TRANSPORT_REQUIRE", 77,
                                     "NUMA is not available here (numa_available() < 0): binding cannot be checked");
}

}  // namespace

TEST_CASE("the heap allocator gives page-aligned writable memory", "[allocator]") {
  HeapAllocator heap;
  ChunkMemory memory = heap.allocate(10000);
  REQUIRE(memory);
  CHECK(memory.bytes >= 10000);
  CHECK(reinterpret_cast<std::uintptr_t>(memory.base) % 4096 == 0);
  std::memset(memory.base, 1, memory.bytes);
  heap.deallocate(memory);
}

TEST_CASE("the huge page allocator says which pages it uses and logs why it fell back", "[allocator]") {
  std::vector<std::string> lines;
  std::mutex mutex;
  daqx::set_log_sink([&](daqx::LogLevel, std::string_view component, std::string_view message) {
    std::lock_guard lock(mutex);
    lines.push_back(std::string(component) + ": " + std::string(message));
  });
  HugePageAllocator huge;
  daqx::set_log_sink({});
  INFO("allocator: " << huge.describe());
  if (huge.pages() != PageKind::explicit_huge) {
    // No reserved huge pages on this machine: the fallback must have said so, with the reason.
    REQUIRE_FALSE(lines.empty());
    CHECK_THAT(lines.front(), Catch::Contains("no reserved huge pages"));
  }
  ChunkMemory memory = huge.allocate(3u << 20);
  REQUIRE(memory);
  CHECK(memory.bytes % (2u << 20) == 0);
  CHECK(reinterpret_cast<std::uintptr_t>(memory.base) % (2u << 20) == 0);
  std::memset(memory.base, 7, memory.bytes);
  huge.deallocate(memory);
}

TEST_CASE("a NUMA-bound pool has every page on its node, as the kernel reports it", "[allocator][numa]") {
  skip_unless_numa_available();
  int nodes_checked = 0;
  for (int node = 0; node <= max_numa_node(); ++node) {
    if (numa_bitmask_isbitset(numa_all_nodes_ptr, static_cast<unsigned>(node)) == 0) continue;
    auto allocator = std::make_shared<NumaAllocator>(node);
    Pool pool(PoolConfig::geometric("test/numa", 4096, 65536, 1u << 20, 1u << 20), allocator);
    Ref ref = pool.allocate(65536);
    REQUIRE(ref);
    // move_pages: where the pages really are.
    std::vector<int> where = page_nodes(ref.data(), ref.size());
    REQUIRE(where.size() == 16);
    for (int page_node : where) CHECK(page_node == node);
    // get_mempolicy: the policy on the address is a strict bind to that node.
    int mode = -1;
    unsigned long mask[16] = {};
    REQUIRE(get_mempolicy(&mode, mask, sizeof(mask) * 8, ref.data(), MPOL_F_ADDR) == 0);
    CHECK(mode == MPOL_BIND);
    CHECK((mask[node / 64] >> (node % 64) & 1UL) == 1UL);
    CHECK(allocator->numa_node() == node);
    ++nodes_checked;
  }
  CHECK(nodes_checked >= 1);
  if (max_numa_node() == 0) WARN("one NUMA node here: binding to node 1 is checked in the soft-RoCE guest");
}

TEST_CASE("a NUMA node that does not exist is refused with the reason", "[allocator][numa]") {
  skip_unless_numa_available();
  CHECK_THROWS_WITH(NumaAllocator(max_numa_node() + 1), Catch::Contains("does not exist"));
  CHECK_THROWS_WITH(make_allocator("numa:x"), Catch::Contains("bad NUMA node"));
  CHECK_THROWS_WITH(make_allocator("gpu"), Catch::Contains("unknown allocator 'gpu'"));
  CHECK(make_allocator("numa:0")->numa_node() == 0);
  CHECK(make_allocator("heap")->describe() == "heap");
}

TEST_CASE("the shared-memory allocator makes each chunk a sealed memfd another process can map, and names it",
          "[allocator][shm]") {
  auto shared = make_allocator("shm");
  CHECK(shared->describe() == "shm(memfd)");
  ChunkMemory memory = shared->allocate(10000);
  REQUIRE(memory);
  CHECK(memory.bytes >= 10000);
  const int fd = shared_memory_fd(memory.base);
  REQUIRE(fd >= 0);
  // A second mapping of the same memfd is the same memory: what one writes, the other reads.
  void* again = mmap(nullptr, memory.bytes, PROT_READ, MAP_SHARED, fd, 0);
  REQUIRE(again != MAP_FAILED);
  memory.base[100] = std::byte{0x7e};
  CHECK(static_cast<const std::byte*>(again)[100] == std::byte{0x7e});
  munmap(again, memory.bytes);
  HeapAllocator heap;
  ChunkMemory private_memory = heap.allocate(4096);
  CHECK(shared_memory_fd(private_memory.base) == -1);
  heap.deallocate(private_memory);
  shared->deallocate(memory);
  CHECK(shared_memory_fd(memory.base) == -1);
}

TEST_CASE("shared-memory allocators combine with huge pages and NUMA nodes, and every allocator has its shared "
          "variant", "[allocator][shm]") {
  CHECK(make_allocator("shm:hugepage")->describe() == "shm(memfd,pages=huge)");
  CHECK(make_allocator("shm:numa:0")->numa_node() == 0);
  CHECK(is_shared_allocator("shm:numa:0"));
  CHECK_FALSE(is_shared_allocator("numa:0"));
  CHECK(shared_allocator("heap") == "shm");
  CHECK(shared_allocator("hugepage") == "shm:hugepage");
  CHECK(shared_allocator("numa:1") == "shm:numa:1");
  CHECK(shared_allocator("shm:hugepage") == "shm:hugepage");
  CHECK_THROWS_WITH(make_allocator("shm:numa:x"), Catch::Contains("bad NUMA node"));
}
