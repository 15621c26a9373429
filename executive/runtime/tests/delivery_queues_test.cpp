// The queues frames wait in for an application: the inbox (a bounded multi-producer queue) and a transport's lane
// (single producer, single consumer), each also taken and filled a batch at a time.
#include <catch2/catch.hpp>

#include <array>
#include <cstdint>
#include <span>
#include <thread>
#include <vector>

#include "bounded_queue.hpp"  // executive/runtime/src
#include "delivery_lane.hpp"

using daqx::detail::BoundedQueue;
using daqx::detail::DeliveryLane;

TEST_CASE("the inbox takes a batch up to its room, keeps what did not fit with the caller, and gives batches back in order") {
  BoundedQueue<int> queue(8);
  std::array<int, 5> first{1, 2, 3, 4, 5};
  REQUIRE(queue.try_push(std::span(first)) == 5);
  std::array<int, 5> second{6, 7, 8, 9, 10};
  REQUIRE(queue.try_push(std::span(second)) == 3);  // room for three
  CHECK(second[3] == 9);                            // the rest is still the caller's
  CHECK(second[4] == 10);
  std::array<int, 6> out{};
  REQUIRE(queue.try_pop(std::span(out)) == 6);
  CHECK(out == std::array<int, 6>{1, 2, 3, 4, 5, 6});
  REQUIRE(queue.try_push(std::span(second).subspan(3)) == 2);
  std::array<int, 8> rest{};
  REQUIRE(queue.try_pop(std::span(rest)) == 4);
  CHECK(rest[0] == 7);
  CHECK(rest[3] == 10);
  CHECK(queue.try_pop(std::span(rest)) == 0);
  int single = 0;
  CHECK_FALSE(queue.try_pop(single));
}

TEST_CASE("batches and single values from several producers reach one consumer whole, each producer's in its order") {
  constexpr int kProducers = 3;
  constexpr int kPerProducer = 200000;
  BoundedQueue<std::uint64_t> queue(64);
  std::vector<std::thread> producers;
  for (int p = 0; p < kProducers; ++p) {
    producers.emplace_back([&queue, p] {
      std::uint64_t next = 0;
      std::array<std::uint64_t, 7> batch{};
      while (next < kPerProducer) {
        if (p == 0) {  // one producer pushes singly, the others in batches
          std::uint64_t value = (std::uint64_t{static_cast<unsigned>(p)} << 32) | next;
          if (queue.try_push(value)) ++next;
          else std::this_thread::yield();
          continue;
        }
        const std::size_t n = std::min<std::uint64_t>(batch.size(), kPerProducer - next);
        for (std::size_t i = 0; i < n; ++i) batch[i] = (std::uint64_t{static_cast<unsigned>(p)} << 32) | (next + i);
        const std::size_t pushed = queue.try_push(std::span(batch).first(n));
        next += pushed;
        if (pushed == 0) std::this_thread::yield();
      }
    });
  }
  std::array<std::uint64_t, kProducers> expected{};
  std::size_t received = 0;
  bool in_order = true;
  std::array<std::uint64_t, 16> out{};
  while (received < std::size_t{kProducers} * kPerProducer) {
    const std::size_t n = queue.try_pop(std::span(out));
    if (n == 0) std::this_thread::yield();
    for (std::size_t i = 0; i < n; ++i) {
      const auto producer = static_cast<std::size_t>(out[i] >> 32);
      in_order = in_order && producer < kProducers && (out[i] & 0xffffffffu) == expected[producer];
      if (producer < kProducers) ++expected[producer];
    }
    received += n;
  }
  for (std::thread& t : producers) t.join();
  CHECK(in_order);
  for (std::uint64_t count : expected) CHECK(count == kPerProducer);
}

TEST_CASE("a lane gives published frames a batch at a time, in order, and nothing staged before it is published") {
  DeliveryLane lane(8);
  for (std::uint64_t i = 0; i < 6; ++i) {
    REQUIRE(lane.has_room());
    daqx::Frame frame;
    frame.header.transaction = i;
    lane.stage(std::move(frame));
  }
  std::array<daqx::Frame, 4> out;
  CHECK(lane.take(std::span(out)) == 0);  // staged, not published
  REQUIRE(lane.publish());
  REQUIRE(lane.take(std::span(out)) == 4);
  for (std::uint64_t i = 0; i < 4; ++i) CHECK(out[i].header.transaction == i);
  CHECK(lane.waiting() == 2);
  REQUIRE(lane.take(std::span(out)) == 2);
  CHECK(out[0].header.transaction == 4);
  CHECK(out[1].header.transaction == 5);
  CHECK(lane.drained());
}
