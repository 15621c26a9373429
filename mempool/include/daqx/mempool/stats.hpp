// Pool statistics, read at any time from relaxed counters without stopping the pool.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace daqx::mem {

struct SizeClassStats {
  std::size_t block_size = 0;
  std::size_t blocks_total = 0;  // carved from the chunks made so far
  std::size_t blocks_used = 0;
  std::size_t blocks_free = 0;
  std::size_t chunks = 0;
  std::size_t max_chunks = 0;
  std::size_t high_water = 0;  // most blocks in use at once
  std::uint64_t failed_allocations = 0;
  std::uint64_t double_releases = 0;
  std::size_t blocks_cached = 0;  // of the free blocks, those in threads' caches (SizeClass)
};

struct PoolStats {
  std::string name;
  std::string allocator;
  std::size_t bytes_reserved = 0;  // in chunks
  std::size_t views_total = 0;     // views (Ref::view) the pool can have out at once
  std::size_t views_used = 0;
  std::vector<SizeClassStats> classes;

  std::size_t blocks_used() const noexcept;
  std::uint64_t failed_allocations() const noexcept;
};

}  // namespace daqx::mem
