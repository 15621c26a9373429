// The chunk allocators: heap, huge pages with logged fallbacks, NUMA-bound memory, and shared memory (memfd).
#include "daqx/mempool/allocator.hpp"

#include <fcntl.h>
#include <numa.h>
#include <numaif.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
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

// Binds [memory, memory+bytes) to node with MPOL_BIND; "" or the reason it failed.
std::string bind_to_node(void* memory, std::size_t bytes, int node) {
  bitmask* nodes = numa_allocate_nodemask();
  numa_bitmask_setbit(nodes, static_cast<unsigned>(node));
  // MPOL_BIND (not preferred): the pages must be on that node or the allocation fails; +1 as libnuma does.
  // MPOL_MF_STRICT: should a page be present elsewhere all the same, say so (EIO) rather than hand it out.
  long bound = mbind(memory, bytes, MPOL_BIND, nodes->maskp, nodes->size + 1, MPOL_MF_STRICT);
  int error = errno;
  numa_free_nodemask(nodes);
  return bound == 0 ? std::string() : "mbind for node " + std::to_string(node) + ": " + errno_text(error);
}

void check_node(int node) {
  if (numa_available() < 0) throw std::invalid_argument("NUMA is not available on this system (numa_available() < 0)");
  if (node < 0 || node > numa_max_node() || numa_bitmask_isbitset(numa_all_nodes_ptr, static_cast<unsigned>(node)) == 0)
    throw std::invalid_argument("NUMA node " + std::to_string(node) + " does not exist (this machine has nodes 0.." +
                                std::to_string(numa_max_node()) + ")");
}

// Every page faulted now, so it is placed at chunk creation, not on the data path; 0, or the errno that says why
// the memory could not be had. MADV_POPULATE_WRITE (Linux 5.14) faults the whole range in one call, under the range's memory
// policy as a write would: on a virtual machine, where each fault is a trap to the hypervisor, that is over ten
// times faster than touching every page (0.02 s against 0.33 s for 100 MiB measured here). Older kernels refuse
// the advice (EINVAL); then a write per page. Any other failure it reports (ENOMEM, EFAULT, a poisoned page)
// refuses the chunk, so the pool's growth fails softly. (A memory cgroup at its limit still invokes its OOM
// killer, as a write would: checked here under cgroup v1.)
int populate(void* memory, std::size_t bytes) {
#ifdef MADV_POPULATE_WRITE
  if (madvise(memory, bytes, MADV_POPULATE_WRITE) == 0) return 0;
  if (errno != EINVAL) return errno;
#endif
  auto* bytes_out = static_cast<volatile unsigned char*>(memory);
  for (std::size_t at = 0; at < bytes; at += kPage) bytes_out[at] = 0;
  return 0;
}

// The memfd of every shared chunk of this process, by base address: read when a transport registers a chunk.
std::mutex shared_chunks_mutex;
std::map<const std::byte*, int>& shared_chunks() {
  static std::map<const std::byte*, int> chunks;
  return chunks;
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

NumaAllocator::NumaAllocator(int node) : node_(node) { check_node(node); }

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
  std::string bound = bind_to_node(memory, rounded, node_);
  if (!bound.empty()) {
    log(LogLevel::warning, "mempool/numa", bound);
    munmap(memory, rounded);
    return {};
  }
  if (mprotect(memory, rounded, PROT_READ | PROT_WRITE) != 0) return fail("mprotect", errno);
  if (int error = populate(memory, rounded); error != 0) return fail("MADV_POPULATE_WRITE", error);
  return {static_cast<std::byte*>(memory), rounded};
}

void NumaAllocator::deallocate(ChunkMemory memory) noexcept { munmap(memory.base, memory.bytes); }

SharedMemoryAllocator::SharedMemoryAllocator(bool huge_pages, int node) : huge_pages_(huge_pages), node_(node) {
  if (node >= 0) check_node(node);
}

std::string SharedMemoryAllocator::describe() const {
  std::string text("shm(memfd");
  if (huge_pages_) text.append(",pages=huge");
  if (node_ >= 0) text.append(",node=").append(std::to_string(node_));
  return text.append(")");
}

ChunkMemory SharedMemoryAllocator::allocate(std::size_t bytes) noexcept {
  std::size_t rounded = round_up(bytes, kPage);
  int fd = -1;
  if (huge_pages_ && meminfo_field("HugePages_Free") > 0) {
    std::size_t huge_rounded = round_up(bytes, huge_page_bytes());
    fd = memfd_create("daqx-shm", MFD_CLOEXEC | MFD_ALLOW_SEALING | MFD_HUGETLB);
    if (fd >= 0 && ftruncate(fd, static_cast<off_t>(huge_rounded)) == 0) {
      rounded = huge_rounded;
    } else {
      log(LogLevel::warning, "mempool/shm", "memfd with MFD_HUGETLB failed (" + errno_text(errno) + "): normal pages");
      if (fd >= 0) close(fd);
      fd = -1;
    }
  }
  if (fd < 0) {
    fd = memfd_create("daqx-shm", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0 || ftruncate(fd, static_cast<off_t>(rounded)) != 0) {
      log(LogLevel::warning, "mempool/shm", "memfd of " + std::to_string(rounded) + " bytes failed: " + errno_text(errno));
      if (fd >= 0) close(fd);
      return {};
    }
  }
  // Sealed at its size: a process it is passed to can map it without fearing it shrinks under it (SIGBUS).
  fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL);
  void* memory = mmap(nullptr, rounded, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (memory == MAP_FAILED) {
    log(LogLevel::warning, "mempool/shm", "mmap of a memfd of " + std::to_string(rounded) + " bytes failed: " + errno_text(errno));
    close(fd);
    return {};
  }
  // Transparent huge pages for shmem, where /sys/kernel/mm/transparent_hugepage/shmem_enabled allows advice.
  if (huge_pages_) madvise(memory, rounded, MADV_HUGEPAGE);
  auto refuse = [&](const std::string& reason) {
    log(LogLevel::warning, "mempool/shm", reason);
    munmap(memory, rounded);
    close(fd);
    return ChunkMemory{};
  };
  if (node_ >= 0) {
    // The policy of a shared mapping is the memfd's own: it holds for every process that maps it.
    std::string bound = bind_to_node(memory, rounded, node_);
    if (!bound.empty()) return refuse(bound);
  }
  if (int error = populate(memory, rounded); error != 0)
    return refuse("MADV_POPULATE_WRITE of " + std::to_string(rounded) + " bytes failed: " + errno_text(error));
  std::lock_guard lock(shared_chunks_mutex);
  shared_chunks()[static_cast<std::byte*>(memory)] = fd;
  return {static_cast<std::byte*>(memory), rounded};
}

void SharedMemoryAllocator::deallocate(ChunkMemory memory) noexcept {
  {
    std::lock_guard lock(shared_chunks_mutex);
    auto found = shared_chunks().find(memory.base);
    if (found != shared_chunks().end()) {
      close(found->second);  // a peer that mapped the chunk keeps it until it unmaps it
      shared_chunks().erase(found);
    }
  }
  munmap(memory.base, memory.bytes);
}

int shared_memory_fd(const std::byte* base) noexcept {
  std::lock_guard lock(shared_chunks_mutex);
  auto found = shared_chunks().find(base);
  return found == shared_chunks().end() ? -1 : found->second;
}

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

namespace {

int parse_node(const std::string& spec, const std::string& number) {
  char* end = nullptr;
  long node = std::strtol(number.c_str(), &end, 10);
  if (number.empty() || *end != '\0') throw std::invalid_argument("bad NUMA node in allocator '" + spec + "'");
  return static_cast<int>(node);
}

}  // namespace

bool is_shared_allocator(const std::string& spec) noexcept { return spec == "shm" || spec.rfind("shm:", 0) == 0; }

std::string shared_allocator(const std::string& spec) {
  if (is_shared_allocator(spec)) return spec;
  if (spec == "heap" || spec.empty()) return "shm";
  std::string shared("shm:");
  return shared.append(spec);
}

std::shared_ptr<Allocator> make_allocator(const std::string& spec) {
  if (spec == "shm") return std::make_shared<SharedMemoryAllocator>(false, -1);
  if (spec == "shm:hugepage") return std::make_shared<SharedMemoryAllocator>(true, -1);
  if (spec.rfind("shm:numa:", 0) == 0) return std::make_shared<SharedMemoryAllocator>(false, parse_node(spec, spec.substr(9)));
  if (spec == "heap") return std::make_shared<HeapAllocator>();
  if (spec == "hugepage") return std::make_shared<HugePageAllocator>();
  if (spec.rfind("numa:", 0) == 0) {
    return std::make_shared<NumaAllocator>(parse_node(spec, spec.substr(5)));
  }
  throw std::invalid_argument("unknown allocator '" + spec +
                              "' (expected heap, hugepage, numa:<node>, shm, shm:hugepage or shm:numa:<node>)");
}

}  // namespace daqx::mem
