// The transport threads' waiter: sleeps until a deadline with sub-millisecond resolution, wakes at once when
// told, and reports ready descriptors with their tags.
#include <catch2/catch.hpp>
#include <sys/eventfd.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "daqx/pt/waiter.hpp"

using Clock = std::chrono::steady_clock;

TEST_CASE("a short deadline is kept to a fraction of a millisecond, not rounded up to one", "[pt][waiter]") {
  daqx::pt::Waiter waiter;
  // The best of several tries: the machine may be busy, but epoll_wait's millisecond rounding would make
  // every one of them take at least 1 ms.
  auto best = std::chrono::nanoseconds::max();
  for (int i = 0; i < 20; ++i) {
    const auto start = Clock::now();
    waiter.wait_until(start + std::chrono::microseconds(200), [](void*, std::uint32_t) {});
    best = std::min(best, std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start));
  }
  INFO("best of 20 waits for 200 us: " << best.count() << " ns");
  CHECK(best >= std::chrono::microseconds(200));
  CHECK(best < std::chrono::microseconds(900));
}

TEST_CASE("wake() ends a wait at once, also one that has not started yet", "[pt][waiter]") {
  daqx::pt::Waiter waiter;
  waiter.wake();  // before the wait: it must not be lost
  auto start = Clock::now();
  waiter.wait_until(start + std::chrono::seconds(10), [](void*, std::uint32_t) {});
  CHECK(Clock::now() - start < std::chrono::seconds(5));
  std::thread waker([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    waiter.wake();
  });
  start = Clock::now();
  waiter.wait_until(start + std::chrono::seconds(10), [](void*, std::uint32_t) {});
  waker.join();
  CHECK(Clock::now() - start < std::chrono::seconds(5));
}

TEST_CASE("a ready descriptor is reported with its tag, by a wait and by a poll", "[pt][waiter]") {
  daqx::pt::Waiter waiter;
  int fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  REQUIRE(fd >= 0);
  int tag = 0;
  waiter.add(fd, &tag);
  void* seen = nullptr;
  CHECK(waiter.poll([&](void* t, std::uint32_t) { seen = t; }) == 0);
  std::uint64_t one = 1;
  REQUIRE(write(fd, &one, sizeof one) == sizeof one);
  CHECK(waiter.poll([&](void* t, std::uint32_t) { seen = t; }) == 1);
  CHECK(seen == &tag);
  seen = nullptr;
  CHECK(waiter.wait_until(Clock::now() + std::chrono::seconds(5), [&](void* t, std::uint32_t) { seen = t; }) == 1);
  CHECK(seen == &tag);
  waiter.remove(fd);
  close(fd);
}
