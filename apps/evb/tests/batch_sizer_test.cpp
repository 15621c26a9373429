// The EvM's batch size as a specification: fixed when eventsPerRequest is set, otherwise about batchBytes of whole
// events per batch (every RU's super-fragment and the trigger fragment), within bounds, steady against small
// changes and started over with the counters.
#include <catch2/catch.hpp>

#include <cstdint>

#include "evm/batch_sizer.hpp"

using namespace daqx::evb;
using namespace daqx::evb::evm;

namespace {

BatchSizing sized(std::uint64_t batch_bytes = BatchSizing{}.batch_bytes) {
  BatchSizing s;
  s.batch_bytes = batch_bytes;
  return s;
}

}  // namespace

TEST_CASE("eventsPerRequest set: every batch has that many events whatever the RUs report") {
  BatchSizer sizer;
  BatchSizing fixed = sized();
  fixed.fixed_events = 32;
  sizer.start(fixed, 2);
  CHECK(sizer.events_per_batch() == 32);
  sizer.observe(0, 1000, 1000 * 1024);
  CHECK(sizer.events_per_batch() == 32);
}

TEST_CASE("the default batch is 2 MiB of whole events") { CHECK(BatchSizing{}.batch_bytes == 2u << 20); }

TEST_CASE("sized in bytes: the minimum before any report, then batchBytes over a whole event's bytes") {
  BatchSizer sizer;
  sizer.start(sized(), 2);
  CHECK(sizer.events_per_batch() == 8);
  sizer.observe(0, 1000, 1000 * 1024);  // 1 KiB per event; the other RU, not heard from, counted the same
  CHECK(sizer.bytes_per_event() == 2048);
  CHECK(sizer.events_per_batch() == 1024);
  sizer.observe(1, 1000, 1000 * 4096);  // the other RU: 4 KiB per event, so 5 KiB per event in all
  CHECK(sizer.bytes_per_event() == 5120);
  CHECK(sizer.events_per_batch() == 409);
}

TEST_CASE("sized in bytes: more RUs of the same fragment size make proportionally fewer events per batch") {
  // The BU holds the whole batch: 8 RUs of 16 KiB are 128 KiB per event, so 16 events (2 MiB), not 64 events of
  // 8 MiB as when each RU's share was sized alone.
  BatchSizer eight;
  eight.start(sized(), 8);
  for (std::size_t ru = 0; ru < 8; ++ru) eight.observe(ru, 1000, 1000 * (16u << 10));
  CHECK(eight.events_per_batch() == 16);
  BatchSizer two;
  two.start(sized(), 2);
  for (std::size_t ru = 0; ru < 2; ++ru) two.observe(ru, 1000, 1000 * (16u << 10));
  CHECK(two.events_per_batch() == 64);
}

TEST_CASE("sized in bytes: large fragments get the minimum, tiny ones the maximum") {
  BatchSizer large;
  large.start(sized(), 1);
  large.observe(0, 10, 10u << 20);  // 1 MiB per event
  CHECK(large.events_per_batch() == 8);
  BatchSizer tiny;
  tiny.start(sized(), 1);
  tiny.observe(0, 100000, 100000 * 64);
  CHECK(tiny.events_per_batch() == 4096);
}

TEST_CASE("sized in bytes: the trigger fragment is part of every event, once an RU has reported") {
  BatchSizer sizer;
  BatchSizing s = sized();
  s.trigger_bytes = 64u << 10;
  sizer.start(s, 1);
  CHECK(sizer.events_per_batch() == 8);  // the RU's sizes are not known yet: the minimum, not 2 MiB / 64 KiB
  sizer.observe(0, 1000, 1000 * 1024);   // 64 KiB + 1 KiB per event
  CHECK(sizer.events_per_batch() == 31);
  BatchSizer alone;  // an EvM without RUs knows its only contributor's size from the start
  alone.start(s, 0);
  CHECK(alone.events_per_batch() == 32);
}

TEST_CASE("sized in bytes: a small trigger fragment does not size the first batches of large RU fragments") {
  BatchSizer sizer;
  BatchSizing s = sized();
  s.trigger_bytes = 1056;  // the EvM's default trigger fragment
  sizer.start(s, 2);
  CHECK(sizer.events_per_batch() == 8);
  sizer.observe(0, 100, 100 * (256u << 10));
  CHECK(sizer.events_per_batch() == 8);
}

TEST_CASE("sized in bytes: reports differ from the last by their differences, a change under a quarter is kept out") {
  BatchSizer sizer;
  sizer.start(sized(), 1);
  sizer.observe(0, 1000, 1000 * 1024);
  REQUIRE(sizer.events_per_batch() == 2048);
  sizer.observe(0, 2000, 1000 * 1024 + 1000 * 1100);  // 1100 B per event since the last report: noise
  CHECK(sizer.events_per_batch() == 2048);
  std::uint64_t fragments = 2000, bytes = 1000 * 1024 + 1000 * 1100;
  for (int n = 0; n < 40; ++n) sizer.observe(0, fragments += 1000, bytes += 1000 * 8192);
  // The sizes really grew to 8 KiB: the batch follows, to within the quarter it ignores (2 MiB / 8 KiB = 256).
  const std::uint32_t followed = sizer.events_per_batch();
  CHECK(followed >= 256);
  CHECK(followed <= 320);
  sizer.observe(0, fragments, bytes);  // no new fragments since: nothing learnt
  CHECK(sizer.events_per_batch() == followed);
}

TEST_CASE("sized in bytes: counters that went back (a restarted RU) start its sizes over") {
  BatchSizer sizer;
  sizer.start(sized(), 1);
  sizer.observe(0, 1000, 1000 * 8192);
  REQUIRE(sizer.events_per_batch() == 256);
  sizer.observe(0, 10, 10 * 1024);
  CHECK(sizer.bytes_per_event() == 1024);
  CHECK(sizer.events_per_batch() == 2048);
}

TEST_CASE("sized in bytes: reports of fragments without bytes size nothing, the batch stays at the minimum") {
  BatchSizer sizer;
  sizer.start(sized(), 2);
  sizer.observe(0, 1000, 0);  // an RU with no sources sends empty super-fragments
  CHECK(sizer.bytes_per_event() == 0);
  CHECK(sizer.events_per_batch() == 8);
}
