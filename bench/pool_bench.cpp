// Pool benchmark: ns per allocate+release for the pool, malloc/free and a fresh written buffer, and the
// write throughput into each, for block sizes 256 B to 8 MiB. Prints a table and writes CSV.
#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "daqx/mempool/pool.hpp"

namespace {

using Clock = std::chrono::steady_clock;

// Keeps the compiler from removing work whose result is otherwise unused.
template <typename T>
void keep(T const& value) {
  asm volatile("" : : "g"(&value) : "memory");
}

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Enough iterations for ~0.2 s per measurement at the slowest plausible speed, within sensible bounds.
std::size_t iterations_for(std::size_t bytes) {
  std::size_t by_volume = (std::size_t{2} << 30) / std::max<std::size_t>(bytes, 4096);
  return std::clamp<std::size_t>(by_volume, 200, 2'000'000);
}

struct Row {
  std::size_t bytes;
  double pool_ns, malloc_ns, fresh_ns;             // one allocate + release (fresh: + first write)
  double pool_write_gbs, malloc_write_gbs, fresh_write_gbs;  // allocate, fill, release, per byte
};

// The naive case of the FairMQ paper: every message gets a new buffer, whose pages fault on first write.
std::byte* fresh_buffer(std::size_t bytes) {
  void* memory = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  return memory == MAP_FAILED ? nullptr : static_cast<std::byte*>(memory);
}

template <typename Fn>
double time_ns(std::size_t iterations, Fn&& fn) {
  fn();  // warm: first chunk, first mapping
  auto start = Clock::now();
  for (std::size_t i = 0; i < iterations; ++i) fn();
  return seconds_since(start) * 1e9 / static_cast<double>(iterations);
}

}  // namespace

int main(int argc, char** argv) {
  std::string csv_path = argc > 1 ? argv[1] : "pool_bench.csv";
  using namespace daqx::mem;
  Pool pool(PoolConfig::geometric("bench/pool", 256, 8u << 20, 16u << 20, 32u << 20), make_allocator("heap"));

  std::vector<Row> rows;
  for (std::size_t bytes = 256; bytes <= (8u << 20); bytes *= 2) {
    Row row{};
    row.bytes = bytes;
    std::size_t n = iterations_for(bytes);
    std::size_t n_alloc = std::min<std::size_t>(n * 4, 2'000'000);

    row.pool_ns = time_ns(n_alloc, [&] {
      Ref ref = pool.allocate(bytes);
      keep(ref);
    });
    row.malloc_ns = time_ns(n_alloc, [&] {
      void* memory = std::malloc(bytes);
      keep(memory);
      std::free(memory);
    });
    // A fresh buffer is only useful once written, so its cost includes the first touch of each page.
    std::size_t n_fresh = std::max<std::size_t>(n / 4, 50);
    row.fresh_ns = time_ns(n_fresh, [&] {
      std::byte* memory = fresh_buffer(bytes);
      for (std::size_t at = 0; at < bytes; at += 4096) memory[at] = std::byte{1};
      keep(memory);
      munmap(memory, bytes);
    });

    auto gbs = [&](double ns_per_op) { return static_cast<double>(bytes) / ns_per_op; };  // bytes/ns = GB/s
    row.pool_write_gbs = gbs(time_ns(n, [&] {
      Ref ref = pool.allocate(bytes);
      std::memset(ref.data(), 0x5a, bytes);
      keep(ref);
    }));
    row.malloc_write_gbs = gbs(time_ns(n, [&] {
      void* memory = std::malloc(bytes);
      std::memset(memory, 0x5a, bytes);
      keep(memory);
      std::free(memory);
    }));
    row.fresh_write_gbs = gbs(time_ns(n_fresh, [&] {
      std::byte* memory = fresh_buffer(bytes);
      std::memset(memory, 0x5a, bytes);
      keep(memory);
      munmap(memory, bytes);
    }));
    rows.push_back(row);
  }

  std::printf("daqx pool benchmark: allocate+release (ns) and allocate+fill+release (GB/s), one thread\n");
  std::printf("%10s | %9s %9s %11s | %8s %8s | %9s %9s %9s | %7s %7s\n", "block", "pool ns", "malloc ns",
              "fresh ns", "malloc/", "fresh/", "pool", "malloc", "fresh", "pool/", "pool/");
  std::printf("%10s | %9s %9s %11s | %8s %8s | %9s %9s %9s | %7s %7s\n", "", "", "", "(+fault)", "pool",
              "pool", "GB/s", "GB/s", "GB/s", "malloc", "fresh");
  std::ofstream csv(csv_path);
  csv << "block_bytes,pool_ns,malloc_ns,fresh_ns,malloc_over_pool,fresh_over_pool,pool_write_gbs,malloc_write_gbs,"
         "fresh_write_gbs\n";
  for (const Row& r : rows) {
    std::printf("%10zu | %9.1f %9.1f %11.1f | %8.2f %8.1f | %9.2f %9.2f %9.2f | %7.2f %7.2f\n", r.bytes, r.pool_ns,
                r.malloc_ns, r.fresh_ns, r.malloc_ns / r.pool_ns, r.fresh_ns / r.pool_ns, r.pool_write_gbs,
                r.malloc_write_gbs, r.fresh_write_gbs, r.pool_write_gbs / r.malloc_write_gbs,
                r.pool_write_gbs / r.fresh_write_gbs);
    csv << r.bytes << ',' << r.pool_ns << ',' << r.malloc_ns << ',' << r.fresh_ns << ',' << r.malloc_ns / r.pool_ns
        << ',' << r.fresh_ns / r.pool_ns << ',' << r.pool_write_gbs << ',' << r.malloc_write_gbs << ','
        << r.fresh_write_gbs << '\n';
  }
  std::printf("CSV written to %s\n", csv_path.c_str());
  return pool.blocks_in_use() == 0 ? 0 : 1;
}
