// The chunk allocators: heap, huge pages with logged fallbacks, and NUMA-bound memory.
#include "daqx/mempool/allocator.hpp"

#include <numa.h>
#include <numaif.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

#include "daqx/services/log.hpp"

namespace daqx::mem {
namespace {

constexpr std::size_t kPage = 4096;

std::size_t round_up(std::size_t bytes, std::size_t unit) { return (bytes + unit - 1) / unit * unit; }

std::string errno_text(int error) { return std::strerror(error); }

// A field of /proc/meminfo in kB (or pages for the HugePages_ counters); -1 when absent.
long meminfo_field(const std::string& field) {
  std::ifstream meminfo("/proc/meminfo");
  std::string name;
  long value = 0;
  std::string rest;
  while (meminfo >> name >> value) {
    std::getline(meminfo, rest);
    if (name == field + ":") return value;
  }
  return -1;
}

std::string read_first_line(const char* path) {
  std::ifstream file(path);
  std::string line;
  std::getline(file, line);
  return line;
}

std::size_t huge_page_bytes() {
  long kib = meminfo_field("Hugepagesize");
  return kib > 0 ? static_cast<std::size_t>(kib) * 1024 : std::size_t{2} << 20;
}

// Anonymous mapping aligned to `alignment` (so transparent huge pages can back it): over-map and trim.
std::byte* map_aligned(std::size_t bytes, std::size_t alignment) {
  std::size_t span = bytes + alignment;
  void* raw = mmap(nullptr, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) return nullptr;
  auto start = reinterpret_cast<std::uintptr_t>(raw);
  std::uintptr_t aligned = (start + alignment - 1) / alignment * alignment;
  if (aligned > start) munmap(raw, aligned - start);
  std::uintptr_t end = aligned + bytes;
  if (start + span > end) munmap(reinterpret_cast<void*>(end), start + span - end);
  return reinterpret_cast<std::byte*>(aligned);
}

}  // namespace

std::string to_string(PageKind kind) {
  switch (kind) {
    case PageKind::normal: return "normal";
    case PageKind::transparent: return "transparent-huge";
    case PageKind::explicit_huge: return "explicit-huge";
  }
  return "?";
}

ChunkMemory HeapAllocator::allocate(std::size_t bytes) noexcept {
  std::size_t rounded = round_up(bytes, kPage);
  void* memory = std::aligned_alloc(kPage, rounded);
  if (memory == nullptr) {
    log(LogLevel::warning, "mempool/heap", "aligned_alloc of " + std::to_string(rounded) + " bytes failed");
    return {};
  }
  return {static_cast<std::byte*>(memory), rounded};
}

void HeapAllocator::deallocate(ChunkMemory memory) noexcept { std::free(memory.base); }

HugePageAllocator::HugePageAllocator() {
  long reserved_free = meminfo_field("HugePages_Free");
  if (reserved_free > 0) {
    pages_ = PageKind::explicit_huge;
    return;
  }
  std::string thp = read_first_line("/sys/kernel/mm/transparent_hugepage/enabled");
  if (thp.find("[always]") != std::string::npos || thp.find("[madvise]") != std::string::npos) {
    pages_ = PageKind::transparent;
    log(LogLevel::info, "mempool/hugepage",
        "no reserved huge pages (HugePages_Free=" + std::to_string(reserved_free) +
            ", see /proc/sys/vm/nr_hugepages): using transparent huge pages");
    return;
  }
  pages_ = PageKind::normal;
  log(LogLevel::warning, "mempool/hugepage",
      "no reserved huge pages and transparent huge pages are disabled (" + thp + "): using normal pages");
}

std::string HugePageAllocator::describe() const { return "hugepage(pages=" + to_string(pages_) + ")"; }

ChunkMemory HugePageAllocator::allocate(std::size_t bytes) noexcept {
  std::size_t huge = huge_page_bytes();
  std::size_t rounded = round_up(bytes, huge);
  if (pages_ == PageKind::explicit_huge) {
    void* memory = mmap(nullptr, rounded, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB, -1, 0);
    if (memory != MAP_FAILED) return {static_cast<std::byte*>(memory), rounded};
    log(LogLevel::warning, "mempool/hugepage",
        "MAP_HUGETLB of " + std::to_string(rounded) + " bytes failed (" + errno_text(errno) +
            "): this chunk uses transparent huge pages");
  }
  std::byte* memory = map_aligned(rounded, huge);
  if (memory == nullptr) {
    log(LogLevel::warning, "mempool/hugepage", "mmap of " + std::to_string(rounded) + " bytes failed: " + errno_text(errno));
    return {};
  }
  if (pages_ != PageKind::normal) madvise(memory, rounded, MADV_HUGEPAGE);
  return {memory, rounded};
}

void HugePageAllocator::deallocate(ChunkMemory memory) noexcept { munmap(memory.base, memory.bytes); }

NumaAllocator::NumaAllocator(int node) : node_(node) {
  if (numa_available() < 0) throw std::invalid_argument("NUMA is not available on this system (numa_available() < 0)");
  if (node < 0 || node > numa_max_node() || numa_bitmask_isbitset(numa_all_nodes_ptr, static_cast<unsigned>(node)) == 0)
    throw std::invalid_argument("NUMA node " + std::to_string(node) + " does not exist (this machine has nodes 0.." +
                                std::to_string(numa_max_node()) + ")");
}

std::string NumaAllocator::describe() const { return "numa(node=" + std::to_string(node_) + ")"; }

ChunkMemory NumaAllocator::allocate(std::size_t bytes) noexcept {
  std::size_t rounded = round_up(bytes, kPage);
  // Mapped without access first: a read-write mapping could be merged at once with a read-write neighbour into
  // one VMA, and another thread's fault in that neighbour could then place a transparent huge page across the
  // boundary, on its own node, before mbind runs; mbind leaves pages already present where they are. A
  // PROT_NONE mapping merges with nothing and cannot be faulted; once bound it merges only with mappings of the
  // same policy.
  void* memory = mmap(nullptr, rounded, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (memory == MAP_FAILED) {
    log(LogLevel::warning, "mempool/numa", "mmap of " + std::to_string(rounded) + " bytes failed: " + errno_text(errno));
    return {};
  }
  auto fail = [&](const std::string& what, int error) {
    log(LogLevel::warning, "mempool/numa", what + " for node " + std::to_string(node_) + " failed: " + errno_text(error));
    munmap(memory, rounded);
    return ChunkMemory{};
  };
  bitmask* nodes = numa_allocate_nodemask();
  numa_bitmask_setbit(nodes, static_cast<unsigned>(node_));
  // MPOL_BIND (not preferred): the pages must be on that node or the allocation fails; +1 as libnuma does.
  // MPOL_MF_STRICT: should a page be present elsewhere all the same, say so (EIO) rather than hand it out.
  long bound = mbind(memory, rounded, MPOL_BIND, nodes->maskp, nodes->size + 1, MPOL_MF_STRICT);
  int error = errno;
  numa_free_nodemask(nodes);
  if (bound != 0) return fail("mbind", error);
  if (mprotect(memory, rounded, PROT_READ | PROT_WRITE) != 0) return fail("mprotect", errno);
  // Touch every page now, so they are placed (and faulted) at chunk creation, not on the data path.
  auto* bytes_out = static_cast<volatile unsigned char*>(memory);
  for (std::size_t at = 0; at < rounded; at += kPage) bytes_out[at] = 0;
  return {static_cast<std::byte*>(memory), rounded};
}

void NumaAllocator::deallocate(ChunkMemory memory) noexcept { munmap(memory.base, memory.bytes); }

std::vector<int> page_nodes(const void* base, std::size_t bytes) {
  auto first = reinterpret_cast<std::uintptr_t>(base) / kPage * kPage;
  auto last = reinterpret_cast<std::uintptr_t>(base) + bytes;
  std::vector<void*> pages;
  for (std::uintptr_t page = first; page < last; page += kPage) pages.push_back(reinterpret_cast<void*>(page));
  std::vector<int> status(pages.size(), 0);
  if (pages.empty()) return status;
  // nodes == nullptr: move nothing, only report where each page is.
  if (move_pages(0, pages.size(), pages.data(), nullptr, status.data(), 0) != 0) {
    status.assign(pages.size(), -errno);
  }
  return status;
}

int max_numa_node() noexcept { return numa_available() < 0 ? 0 : numa_max_node(); }

std::shared_ptr<Allocator> make_allocator(const std::string& spec) {
  if (spec == "heap") return std::make_shared<HeapAllocator>();
  if (spec == "hugepage") return std::make_shared<HugePageAllocator>();
  if (spec.rfind("numa:", 0) == 0) {
    std::string number = spec.substr(5);
    char* end = nullptr;
    long node = std::strtol(number.c_str(), &end, 10);
    if (number.empty() || *end != '\0') throw std::invalid_argument("bad NUMA node in allocator '" + spec + "'");
    return std::make_shared<NumaAllocator>(static_cast<int>(node));
  }
  throw std::invalid_argument("unknown allocator '" + spec + "' (expected heap, hugepage or numa:<node>)");
}

}  // namespace daqx::mem
