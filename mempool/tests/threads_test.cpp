// Allocation on some threads and release on others, at full speed, with payload checks.
#include <catch2/catch.hpp>

#include <atomic>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>

#include "daqx/mempool/pool.hpp"

using namespace daqx::mem;

namespace {

// A plain locked queue between producer and consumer threads: test plumbing, not the thing under test.
class Handoff {
 public:
  void put(Ref ref) {
    {
      std::lock_guard lock(mutex_);
      queue_.push_back(std::move(ref));
    }
    ready_.notify_one();
  }
  void close() {
    {
      std::lock_guard lock(mutex_);
      closed_ = true;
    }
    ready_.notify_all();
  }
  bool take(Ref& out) {
    std::unique_lock lock(mutex_);
    ready_.wait(lock, [&] { return closed_ || !queue_.empty(); });
    if (queue_.empty()) return false;
    out = std::move(queue_.front());
    queue_.pop_front();
    return true;
  }

 private:
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<Ref> queue_;
  bool closed_ = false;
};

}  // namespace

TEST_CASE("blocks allocated on producer threads are released on consumer threads without loss", "[pool][threads]") {
  constexpr int kProducers = 3;
  constexpr int kConsumers = 3;
  constexpr int kPerProducer = 40000;
  // Small on purpose: producers hit exhaustion often and must back off until consumers release.
  Pool pool(PoolConfig::geometric("test/threads", 64, 1024, 16 * 1024, 64 * 1024), std::make_shared<HeapAllocator>());
  Handoff handoff;
  std::atomic<long> checked{0};
  std::atomic<long> corrupt{0};
  std::atomic<long> backoffs{0};

  std::vector<std::thread> consumers;
  for (int c = 0; c < kConsumers; ++c) {
    consumers.emplace_back([&] {
      Ref ref;
      while (handoff.take(ref)) {
        auto stamp = static_cast<unsigned char>(ref.data()[0]);
        for (std::size_t i = 1; i < ref.size(); ++i)
          if (static_cast<unsigned char>(ref.data()[i]) != stamp) {
            corrupt.fetch_add(1);
            break;
          }
        checked.fetch_add(1);
        ref.reset();  // released here, on a thread that never allocates
      }
    });
  }
  std::vector<std::thread> producers;
  for (int p = 0; p < kProducers; ++p) {
    producers.emplace_back([&, p] {
      for (int i = 0; i < kPerProducer; ++i) {
        std::size_t bytes = 64u << ((i + p) % 5);
        Ref ref = pool.allocate(bytes);
        while (!ref) {  // back-pressure, not a crash
          backoffs.fetch_add(1);
          std::this_thread::yield();
          ref = pool.allocate(bytes);
        }
        std::memset(ref.data(), (p * 31 + i) & 0xff, ref.size());
        handoff.put(std::move(ref));
      }
    });
  }
  for (auto& t : producers) t.join();
  handoff.close();
  for (auto& t : consumers) t.join();

  CHECK(checked == kProducers * kPerProducer);
  CHECK(corrupt == 0);
  PoolStats stats = pool.stats();
  CHECK(stats.blocks_used() == 0);
  for (const auto& c : stats.classes) {
    CHECK(c.double_releases == 0);
    CHECK(c.blocks_free == c.blocks_total);
  }
  INFO("producers backed off " << backoffs.load() << " times");
}

TEST_CASE("shared copies released concurrently return each block exactly once", "[ref][threads]") {
  Pool pool(PoolConfig::geometric("test/fanout", 256, 256, 64 * 256, 64 * 256), std::make_shared<HeapAllocator>());
  for (int round = 0; round < 2000; ++round) {
    Ref payload = pool.allocate(256);
    REQUIRE(payload);
    Ref copies[4] = {payload.share(), payload.share(), payload.share(), payload.share()};
    payload.reset();
    std::thread a([&] { copies[0].reset(); copies[1].reset(); });
    std::thread b([&] { copies[2].reset(); copies[3].reset(); });
    a.join();
    b.join();
    REQUIRE(pool.blocks_in_use() == 0);
  }
  CHECK(pool.stats().classes[0].double_releases == 0);
}
