// The ring of messages in flight: frames are retired only when every message before them is done, whether
// completions come one by one, out of order, or one for many.
#include <catch2/catch.hpp>

#include <vector>

#include "daqx/pt/send_ring.hpp"

TEST_CASE("completions out of order retire messages in posting order", "[pt][ring]") {
  daqx::pt::SendRing ring;
  ring.resize(4);
  std::vector<std::size_t> retired;
  auto retire = [&](std::size_t frames) { retired.push_back(frames); };
  ring.add(0);  // slot 0: the first part of a frame
  ring.add(1);  // slot 1: its end
  ring.add(5);  // slot 2: five small frames packed together
  CHECK(ring.in_flight() == 3);
  ring.complete(2, retire);  // done, but behind slots 0 and 1
  CHECK(retired.empty());
  ring.complete(0, retire);
  CHECK(retired == std::vector<std::size_t>{0});
  ring.complete(1, retire);  // now the rest retire, in order
  CHECK(retired == std::vector<std::size_t>{0, 1, 5});
  CHECK(ring.in_flight() == 0);
}

TEST_CASE("one completion stands for every message before it on a reliable connection", "[pt][ring]") {
  daqx::pt::SendRing ring;
  ring.resize(4);
  std::size_t frames = 0;
  auto retire = [&](std::size_t n) { frames += n; };
  for (int round = 0; round < 3; ++round) {  // wraps around the ring
    const std::size_t first = ring.next_slot();
    ring.add(1);
    ring.add(2);
    CHECK_FALSE(ring.full());
    ring.complete_through(first, retire);  // only the first of the two
    CHECK(ring.in_flight() == 1);
    ring.complete_through((first + 1) % 4, retire);
    CHECK(ring.in_flight() == 0);
  }
  CHECK(frames == 9);
}

TEST_CASE("the ring says when it is full, and a connection torn down has nothing in flight", "[pt][ring]") {
  daqx::pt::SendRing ring;
  ring.resize(3);
  for (int i = 0; i < 3; ++i) ring.add(1);
  CHECK(ring.full());
  ring.clear();
  CHECK(ring.in_flight() == 0);
  CHECK_FALSE(ring.full());
}
