// The ring of messages in flight: a frame's blocks go back only when every message before them is done,
// whether completions come one by one, out of order, or one for many.
#include <catch2/catch.hpp>

#include "daqx/mempool/allocator.hpp"
#include "daqx/mempool/pool.hpp"
#include "daqx/pt/send_ring.hpp"

using namespace daqx;

namespace {

mem::Pool make_pool() {
  mem::PoolConfig config;
  config.name = "test/ring";
  config.classes = {{256, 64, 1, 1}};
  return mem::Pool(config, std::make_shared<mem::HeapAllocator>());
}

}  // namespace

TEST_CASE("completions out of order retire messages in posting order", "[pt][ring]") {
  mem::Pool pool = make_pool();
  pt::SendRing ring;
  ring.resize(4);
  std::vector<std::size_t> sent;
  auto count = [&](std::size_t bytes) { sent.push_back(bytes); };
  ring.add(mem::Ref{}, 0);          // slot 0: the first message of a frame
  ring.add(pool.allocate(256), 300);  // slot 1: ends it
  ring.add(pool.allocate(256), 100);  // slot 2: a frame of its own
  CHECK(ring.in_flight() == 3);
  ring.complete(2, count);  // done, but behind slots 0 and 1
  CHECK(sent.empty());
  CHECK(pool.stats().blocks_used() == 2);
  ring.complete(0, count);
  CHECK(sent.empty());
  ring.complete(1, count);  // now all three retire, in order
  CHECK(sent == std::vector<std::size_t>{300, 100});
  CHECK(pool.stats().blocks_used() == 0);
  CHECK(ring.in_flight() == 0);
}

TEST_CASE("one completion stands for every message before it on a reliable connection", "[pt][ring]") {
  mem::Pool pool = make_pool();
  pt::SendRing ring;
  ring.resize(4);
  std::size_t frames = 0;
  auto count = [&](std::size_t) { ++frames; };
  for (int round = 0; round < 3; ++round) {  // wraps around the ring
    const std::size_t last = ring.next_slot();
    ring.add(pool.allocate(256), 64);
    ring.add(pool.allocate(256), 64);
    CHECK(ring.full() == false);
    ring.complete_through(last, count);  // only the first of the two
    CHECK(ring.in_flight() == 1);
    ring.complete_through((last + 1) % 4, count);
    CHECK(ring.in_flight() == 0);
  }
  CHECK(frames == 6);
  CHECK(pool.stats().blocks_used() == 0);
}

TEST_CASE("a connection torn down releases what it had in flight and says how many frames", "[pt][ring]") {
  mem::Pool pool = make_pool();
  pt::SendRing ring;
  ring.resize(8);
  ring.add(pool.allocate(256), 64);
  ring.add(mem::Ref{}, 0);
  ring.add(pool.allocate(256), 64);
  ring.add(mem::Ref{}, 64);  // sent inline: counted at completion, but its blocks went back at post time
  CHECK(ring.release() == 2);
  CHECK(pool.stats().blocks_used() == 0);
  CHECK(ring.in_flight() == 0);
}
