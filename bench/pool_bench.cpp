// Pool benchmark: ns per allocate+release for the pool, malloc/free and a fresh written buffer, and the
// write throughput into each, for block sizes 256 B to 8 MiB; then the hot path of small blocks with the threads'
// caches on and off against malloc: on one thread, in batches, and allocated on one thread and released on
// another. Prints two tables and writes each as CSV (the second beside the first, "_hot" added to its name).
#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <span>
#include <string>
#include <thread>
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

// A single-producer single-consumer ring of pointers: what a sender hands to the thread that releases.
class Ring {
 public:
  void put(void* item) noexcept {
    const std::size_t at = tail_.load(std::memory_order_relaxed);
    while (at - head_.load(std::memory_order_acquire) == kSlots) std::this_thread::yield();
    slots_[at % kSlots] = item;
    tail_.store(at + 1, std::memory_order_release);
  }
  void* take() noexcept {
    const std::size_t at = head_.load(std::memory_order_relaxed);
    while (tail_.load(std::memory_order_acquire) == at) std::this_thread::yield();
    void* item = slots_[at % kSlots];
    head_.store(at + 1, std::memory_order_release);
    return item;
  }

 private:
  static constexpr std::size_t kSlots = 256;
  alignas(64) std::atomic<std::size_t> head_{0};
  alignas(64) std::atomic<std::size_t> tail_{0};
  alignas(64) void* slots_[kSlots] = {};
};

// ns per item of `count` items allocated on this thread and released on another, through a Ring.
template <typename Allocate, typename Release>
double cross_thread_ns(std::size_t count, Allocate&& allocate, Release&& release) {
  Ring ring;
  std::thread releaser([&] {
    for (std::size_t i = 0; i < count; ++i) release(ring.take());
  });
  auto start = Clock::now();
  for (std::size_t i = 0; i < count; ++i) {
    void* item = allocate();
    while (item == nullptr) {  // the pool is short while the ring holds blocks: wait for the releaser
      std::this_thread::yield();
      item = allocate();
    }
    ring.put(item);
  }
  releaser.join();
  return seconds_since(start) * 1e9 / static_cast<double>(count);
}

struct HotRow {
  std::string what;
  std::size_t bytes;
  double cached_ns, uncached_ns, malloc_ns;
};

// The small blocks' hot path, with the threads' caches (PoolConfig::thread_cache_blocks) on and off.
std::vector<HotRow> hot_rows() {
  using namespace daqx::mem;
  auto make_pool = [](std::size_t cache_blocks) {
    PoolConfig config = PoolConfig::geometric("bench/hot", 256, 4096, 4u << 20, 4u << 20);
    config.thread_cache_blocks = cache_blocks;
    return std::make_unique<Pool>(config, make_allocator("heap"));
  };
  auto cached = make_pool(32);
  auto uncached = make_pool(0);
  constexpr std::size_t kOps = 4'000'000;
  constexpr std::size_t kCrossOps = 2'000'000;
  constexpr std::size_t kBatch = 32;
  std::vector<HotRow> rows;
  for (std::size_t bytes : {std::size_t{256}, std::size_t{4096}}) {
    auto same_thread = [&](Pool& pool) {
      return time_ns(kOps, [&] {
        Ref ref = pool.allocate(bytes);
        ref.data()[0] = std::byte{1};  // a header: untouched pages would time page walks, not the pool
        keep(ref);
      });
    };
    rows.push_back({"one thread: allocate, release", bytes, same_thread(*cached), same_thread(*uncached),
                    time_ns(kOps, [&] {
                      auto* memory = static_cast<std::byte*>(std::malloc(bytes));
                      memory[0] = std::byte{1};
                      keep(memory);
                      std::free(memory);
                    })});
    auto batch = [&](Pool& pool) {
      std::vector<Ref> refs(kBatch);
      return time_ns(kOps / kBatch, [&] {
               pool.allocate(bytes, std::span<Ref>(refs));
               for (Ref& ref : refs) ref.data()[0] = std::byte{1};
               keep(refs);
               for (Ref& ref : refs) ref.reset();
             }) /
             kBatch;
    };
    std::vector<void*> memories(kBatch);
    rows.push_back({"one thread: batch of 32, release each", bytes, batch(*cached), batch(*uncached),
                    time_ns(kOps / kBatch, [&] {
                      for (void*& memory : memories) {
                        memory = std::malloc(bytes);
                        static_cast<std::byte*>(memory)[0] = std::byte{1};
                      }
                      keep(memories);
                      for (void* memory : memories) std::free(memory);
                    }) / kBatch});
    auto cross = [&](Pool& pool) {
      return cross_thread_ns(
          kCrossOps,
          [&]() -> void* {
            Ref ref = pool.allocate(bytes);
            if (ref) ref.data()[0] = std::byte{1};
            return std::move(ref).into_raw();
          },
          [](void* block) { Ref::from_raw(static_cast<Block*>(block)).reset(); });
    };
    rows.push_back({"allocate on one thread, release on another", bytes, cross(*cached), cross(*uncached),
                    cross_thread_ns(
                        kCrossOps,
                        [&] {
                          void* memory = std::malloc(bytes);
                          static_cast<std::byte*>(memory)[0] = std::byte{1};
                          return memory;
                        },
                        [](void* memory) { std::free(memory); })});
  }
  if (cached->blocks_in_use() != 0 || uncached->blocks_in_use() != 0) std::fprintf(stderr, "blocks lost\n");
  return rows;
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

  const std::vector<HotRow> hot = hot_rows();
  std::printf("\nhot path, ns per block (allocate, write one byte, release); pool with the threads' caches (32 blocks)"
              " and without\n");
  std::printf("%-44s %6s | %9s %9s %9s | %9s %9s\n", "", "block", "cached", "uncached", "malloc", "uncached/",
              "malloc/");
  std::printf("%-44s %6s | %9s %9s %9s | %9s %9s\n", "", "", "ns", "ns", "ns", "cached", "cached");
  std::string hot_path = csv_path;
  const std::size_t dot = hot_path.rfind(".csv");
  hot_path.insert(dot == std::string::npos ? hot_path.size() : dot, "_hot");
  std::ofstream hot_csv(hot_path);
  hot_csv << "case,block_bytes,cached_ns,uncached_ns,malloc_ns\n";
  for (const HotRow& r : hot) {
    std::printf("%-44s %6zu | %9.1f %9.1f %9.1f | %9.2f %9.2f\n", r.what.c_str(), r.bytes, r.cached_ns,
                r.uncached_ns, r.malloc_ns, r.uncached_ns / r.cached_ns, r.malloc_ns / r.cached_ns);
    hot_csv << '"' << r.what << "\"," << r.bytes << ',' << r.cached_ns << ',' << r.uncached_ns << ',' << r.malloc_ns
            << '\n';
  }
  std::printf("CSV written to %s\n", hot_path.c_str());
  return pool.blocks_in_use() == 0 ? 0 : 1;
}
