// Where pool chunks come from: the heap, huge pages, memory bound to one NUMA node, or shared memory.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

namespace daqx::mem {

struct ChunkMemory {
  std::byte* base = nullptr;
  std::size_t bytes = 0;  // may be more than asked for (rounded to the page size in use)
  explicit operator bool() const noexcept { return base != nullptr; }
};

// Allocators are called only when a pool grows by a whole chunk, never per block.
class Allocator {
 public:
  virtual ~Allocator() = default;
  // Human-readable kind and parameters, shown on status pages ("heap", "numa(node=1,pages=normal)").
  virtual std::string describe() const = 0;
  // Returns empty memory (and logs why) when the system refuses; never throws.
  virtual ChunkMemory allocate(std::size_t bytes) noexcept = 0;
  virtual void deallocate(ChunkMemory memory) noexcept = 0;
  // The NUMA node the memory is bound to, or -1 when the allocator does not bind.
  virtual int numa_node() const noexcept { return -1; }
};

// Plain page-aligned heap memory.
class HeapAllocator final : public Allocator {
 public:
  std::string describe() const override { return "heap"; }
  ChunkMemory allocate(std::size_t bytes) noexcept override;
  void deallocate(ChunkMemory memory) noexcept override;
};

enum class PageKind {
  normal,       // 4 KiB pages
  transparent,  // normal mmap with MADV_HUGEPAGE: the kernel backs it with huge pages when it can
  explicit_huge // MAP_HUGETLB from the reserved huge page pool (/proc/sys/vm/nr_hugepages)
};

std::string to_string(PageKind kind);

// Huge pages: MAP_HUGETLB when huge pages are reserved, else transparent huge pages, else normal pages.
// Each fallback is logged once with its reason; pages() tells what is really in use.
class HugePageAllocator final : public Allocator {
 public:
  HugePageAllocator();
  std::string describe() const override;
  ChunkMemory allocate(std::size_t bytes) noexcept override;
  void deallocate(ChunkMemory memory) noexcept override;
  PageKind pages() const noexcept { return pages_; }

 private:
  PageKind pages_;
};

// Memory bound with mbind (libnuma) to one node and touched at creation so every page is placed there.
class NumaAllocator final : public Allocator {
 public:
  // Throws std::invalid_argument when the node does not exist or NUMA is unavailable.
  explicit NumaAllocator(int node);
  std::string describe() const override;
  ChunkMemory allocate(std::size_t bytes) noexcept override;
  void deallocate(ChunkMemory memory) noexcept override;
  int numa_node() const noexcept override { return node_; }

 private:
  int node_;
};

// Memory another process on this host can map: each chunk is its own memfd (no name in /dev/shm, so nothing
// is left behind when the process ends, however it ends), mapped MAP_SHARED. Huge pages (MFD_HUGETLB when
// huge pages are reserved, else transparent huge pages where shmem allows them) and a NUMA node (mbind) combine
// with it as they do for private memory. shared_memory_fd() names the memfd of a chunk for transports that pass
// it to a peer (ptshm).
class SharedMemoryAllocator final : public Allocator {
 public:
  // node: -1 for no binding. Throws std::invalid_argument when the node does not exist.
  SharedMemoryAllocator(bool huge_pages, int node);
  std::string describe() const override;
  ChunkMemory allocate(std::size_t bytes) noexcept override;
  void deallocate(ChunkMemory memory) noexcept override;
  int numa_node() const noexcept override { return node_; }

 private:
  bool huge_pages_;
  int node_;
};

// The memfd of a chunk made by a SharedMemoryAllocator (base as allocate() returned it), -1 for any other
// memory. The descriptor stays the allocator's: dup it to keep it. A lookup under a lock: for registration
// time, never for the data path.
int shared_memory_fd(const std::byte* base) noexcept;

// The nodes the kernel says hold each page of [base, base+bytes) (move_pages query; -errno for a page
// that is not present). This asks the kernel, so it is the proof of a binding, not the intent.
std::vector<int> page_nodes(const void* base, std::size_t bytes);
// The highest NUMA node number of this machine (0 on a machine without NUMA).
int max_numa_node() noexcept;

// Builds an allocator from its configuration name: "heap", "hugepage", "numa:<node>", and the same in shared
// memory: "shm", "shm:hugepage", "shm:numa:<node>".
// Throws std::invalid_argument with the reason for an unknown name or node.
std::shared_ptr<Allocator> make_allocator(const std::string& spec);
// Whether spec names a shared-memory allocator.
bool is_shared_allocator(const std::string& spec) noexcept;
// The shared-memory allocator with the same pages and node as spec ("hugepage" -> "shm:hugepage").
std::string shared_allocator(const std::string& spec);

}  // namespace daqx::mem
