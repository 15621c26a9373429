// The nton applications' pure logic as a specification: wire layouts, the test pattern over chains,
// per-sender sequence checks, round-trip percentiles, rate windows and the worker's wakeup.
#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstring>
#include <numeric>
#include <thread>
#include <vector>

#include "chain_logic.hpp"
#include "daqx/mempool/pool.hpp"
#include "daqx/nton/protocol.hpp"
#include "daqx/apps/latency.hpp"
#include "pattern_logic.hpp"
#include "daqx/apps/rate_meter.hpp"
#include "sequence_logic.hpp"
#include "daqx/apps/wakeup.hpp"

using namespace daqx;
using namespace daqx::nton;
using namespace daqx::apps;

namespace {

// Small blocks, so a few kilobytes make a chain of several blocks.
mem::Pool small_block_pool() {
  return mem::Pool(mem::PoolConfig::geometric("test/nton", 256, 1024, 64 * 1024, 1 << 20),
                   std::make_shared<mem::HeapAllocator>());
}

std::uint64_t le64(const std::byte* at) { return detail::load_le<std::uint64_t>(at); }
std::uint32_t le32(const std::byte* at) { return detail::load_le<std::uint32_t>(at); }

}  // namespace

// ---- wire layouts ---------------------------------------------------------------------------------------

TEST_CASE("a data header is 32 little-endian bytes at fixed offsets and decodes to what was encoded", "[protocol]") {
  DataHeader h;
  h.sequence = 0x0102030405060708ull;
  h.sender = 0x11223344;
  h.run = 7;
  h.payload_length = 4096;
  h.ack_every = 16;
  h.flags = data_flags::pattern | data_flags::ack_request;
  std::array<std::byte, kDataHeaderSize> bytes;
  bytes.fill(std::byte{0xEE});
  encode(h, bytes.data());
  CHECK(bytes[0] == std::byte{0x08});  // least significant byte first
  CHECK(le64(&bytes[0]) == h.sequence);
  CHECK(le32(&bytes[8]) == h.sender);
  CHECK(le32(&bytes[12]) == 7);
  CHECK(le32(&bytes[16]) == 4096);
  CHECK(le32(&bytes[20]) == 16);
  CHECK(bytes[24] == std::byte{0x03});
  CHECK(bytes[25] == std::byte{kProtocolVersion});
  CHECK(le32(&bytes[28]) == 0);  // reserved bytes are zero
  CHECK(bytes[26] == std::byte{0});

  const DataHeader back = decode_data_header(bytes.data());
  CHECK(back.sequence == h.sequence);
  CHECK(back.sender == h.sender);
  CHECK(back.run == h.run);
  CHECK(back.payload_length == h.payload_length);
  CHECK(back.ack_every == h.ack_every);
  CHECK(back.flags == h.flags);
  CHECK(back.version == kProtocolVersion);
}

TEST_CASE("an acknowledgement is 16 bytes: highest sequence, then run", "[protocol]") {
  std::array<std::byte, kAckSize> bytes;
  bytes.fill(std::byte{0xEE});
  encode(Ack{123456789012ull, 3}, bytes.data());
  CHECK(le64(&bytes[0]) == 123456789012ull);
  CHECK(le32(&bytes[8]) == 3);
  CHECK(le32(&bytes[12]) == 0);
  const Ack back = decode_ack(bytes.data());
  CHECK(back.highest == 123456789012ull);
  CHECK(back.run == 3);
}

TEST_CASE("a ping header is 16 bytes: round, then payload length", "[protocol]") {
  std::array<std::byte, kPingHeaderSize> bytes;
  encode(PingHeader{42, 64}, bytes.data());
  CHECK(le64(&bytes[0]) == 42);
  CHECK(le32(&bytes[8]) == 64);
  CHECK(le32(&bytes[12]) == 0);
  const PingHeader back = decode_ping_header(bytes.data());
  CHECK(back.round == 42);
  CHECK(back.payload_length == 64);
}

TEST_CASE("function codes are distinct", "[protocol]") {
  const std::array<std::uint16_t, 4> codes{function::data, function::ack, function::ping, function::pong};
  for (std::size_t i = 0; i < codes.size(); ++i)
    for (std::size_t j = i + 1; j < codes.size(); ++j) CHECK(codes[i] != codes[j]);
}

// ---- the pattern ----------------------------------------------------------------------------------------

TEST_CASE("a filled pattern verifies for every length and starting position", "[pattern]") {
  const std::uint64_t seed = pattern_seed(5, 77);
  for (std::size_t position : {0u, 1u, 3u, 7u, 8u, 13u}) {
    for (std::size_t length : {0u, 1u, 7u, 8u, 9u, 64u, 1001u}) {
      std::vector<std::byte> bytes(length);
      fill_pattern(bytes, position, seed);
      CHECK(verify_pattern(std::span<const std::byte>(bytes), position, seed));
    }
  }
}

TEST_CASE("one changed byte anywhere fails the verification", "[pattern]") {
  const std::uint64_t seed = pattern_seed(2, 9);
  std::vector<std::byte> bytes(203);
  fill_pattern(bytes, 5, seed);
  for (std::size_t at : {0u, 2u, 3u, 100u, 198u, 202u}) {
    std::vector<std::byte> damaged = bytes;
    damaged[at] ^= std::byte{0x10};
    CHECK_FALSE(verify_pattern(std::span<const std::byte>(damaged), 5, seed));
  }
}

TEST_CASE("the pattern differs with the sender, the sequence and the position", "[pattern]") {
  std::vector<std::byte> bytes(256);
  fill_pattern(bytes, 0, pattern_seed(1, 1));
  const std::span<const std::byte> view(bytes);
  CHECK(verify_pattern(view, 0, pattern_seed(1, 1)));
  CHECK_FALSE(verify_pattern(view, 0, pattern_seed(2, 1)));  // another sender's frame
  CHECK_FALSE(verify_pattern(view, 0, pattern_seed(1, 2)));  // the next frame of the same sender
  CHECK_FALSE(verify_pattern(view, 8, pattern_seed(1, 1)));  // shifted by a word
  CHECK_FALSE(verify_pattern(view, 1, pattern_seed(1, 1)));  // shifted by a byte
}

TEST_CASE("a pattern written in one piece verifies in pieces split anywhere", "[pattern]") {
  const std::uint64_t seed = pattern_seed(3, 4);
  std::vector<std::byte> bytes(500);
  fill_pattern(bytes, 0, seed);
  for (std::size_t split : {1u, 5u, 8u, 250u, 499u}) {
    CHECK(verify_pattern(std::span<const std::byte>(bytes).first(split), 0, seed));
    CHECK(verify_pattern(std::span<const std::byte>(bytes).subspan(split), split, seed));
  }
}

TEST_CASE("the pattern fills and verifies across the blocks of a chain", "[pattern][chain]") {
  mem::Pool pool = small_block_pool();
  const std::size_t payload = 5000;  // about five 1 KiB blocks after the 32-byte frame header
  mem::Ref frame = pool.allocate_chain(kFrameHeaderSize + payload);
  REQUIRE(frame);
  REQUIRE(frame.chain_length() > 1);
  REQUIRE(frame.total_size() == kFrameHeaderSize + payload);
  const std::size_t offset = kFrameHeaderSize + kDataHeaderSize;
  const std::size_t length = payload - kDataHeaderSize;
  const std::uint64_t seed = pattern_seed(10, 11);
  CHECK(fill_pattern(frame.head(), offset, length, seed));
  CHECK(verify_pattern(frame.head(), offset, length, seed));
  CHECK_FALSE(verify_pattern(frame.head(), offset, length, pattern_seed(10, 12)));

  // Damage the last byte of the chain: it lives in the last block.
  const mem::Block* last = frame.head();
  while (last->next() != nullptr) last = last->next();
  last->data()[last->size() - 1] ^= std::byte{1};
  CHECK_FALSE(verify_pattern(frame.head(), offset, length, seed));
}

TEST_CASE("a chain shorter than the pattern length does not verify", "[pattern][chain]") {
  mem::Pool pool = small_block_pool();
  mem::Ref frame = pool.allocate_chain(3000);
  REQUIRE(frame);
  CHECK_FALSE(fill_pattern(frame.head(), 0, 3001, 1));
  CHECK(fill_pattern(frame.head(), 0, 3000, 1));
  CHECK_FALSE(verify_pattern(frame.head(), 0, 3001, 1));
}

TEST_CASE("bytes copied into a chain across a block boundary come back the same", "[chain]") {
  mem::Pool pool = small_block_pool();
  mem::Ref frame = pool.allocate_chain(4000);
  REQUIRE(frame);
  REQUIRE(frame.chain_length() > 1);
  const std::size_t boundary = frame.size();  // the head block's window ends here
  std::array<std::byte, 32> in;
  for (std::size_t i = 0; i < in.size(); ++i) in[i] = static_cast<std::byte>(i + 1);
  REQUIRE(copy_to_chain(frame.head(), boundary - 10, in.data(), in.size()));
  std::array<std::byte, 32> out{};
  REQUIRE(copy_from_chain(frame.head(), boundary - 10, out.data(), out.size()));
  CHECK(std::memcmp(in.data(), out.data(), in.size()) == 0);
  CHECK(frame.head()->next()->data()[21] == std::byte{32});  // the tail went to the second block
  CHECK_FALSE(copy_from_chain(frame.head(), 4000 - 8, out.data(), 16));
}

// ---- sequences --------------------------------------------------------------------------------------------

TEST_CASE("frames from 1 upwards are in order and the highest is remembered", "[sequence]") {
  SequenceTracker tracker;
  for (std::uint64_t s = 1; s <= 100; ++s) CHECK(tracker.accept(1, s) == SequenceCheck::in_order);
  CHECK(tracker.highest() == 100);
  CHECK(tracker.expected() == 101);
}

TEST_CASE("a gap is one error, and the frames after it are in order again", "[sequence]") {
  SequenceTracker tracker;
  CHECK(tracker.accept(1, 1) == SequenceCheck::in_order);
  CHECK(tracker.accept(1, 5) == SequenceCheck::gap);
  CHECK(tracker.accept(1, 6) == SequenceCheck::in_order);
  CHECK(tracker.highest() == 6);
}

TEST_CASE("a duplicate or a late frame is behind and changes nothing", "[sequence]") {
  SequenceTracker tracker;
  tracker.accept(1, 1);
  tracker.accept(1, 2);
  CHECK(tracker.accept(1, 2) == SequenceCheck::behind);
  CHECK(tracker.accept(1, 1) == SequenceCheck::behind);
  CHECK(tracker.accept(1, 3) == SequenceCheck::in_order);
  CHECK(tracker.highest() == 3);
}

TEST_CASE("a new run starts again from 1", "[sequence]") {
  SequenceTracker tracker;
  for (std::uint64_t s = 1; s <= 10; ++s) tracker.accept(1, s);
  CHECK(tracker.accept(2, 1) == SequenceCheck::in_order);
  CHECK(tracker.run() == 2);
  CHECK(tracker.highest() == 1);
  CHECK(tracker.accept(2, 2) == SequenceCheck::in_order);
}

TEST_CASE("a run whose first frames are missing starts with a gap", "[sequence]") {
  SequenceTracker tracker;
  CHECK(tracker.accept(4, 3) == SequenceCheck::gap);
  CHECK(tracker.accept(4, 4) == SequenceCheck::in_order);
}

TEST_CASE("the sender table keeps senders sorted and separate", "[sequence]") {
  SenderTable table;
  table.reset(8);
  bool added = false;
  table.find_or_add(30, added);
  CHECK(added);
  table.find_or_add(10, added);
  table.find_or_add(20, added);
  SenderState& again = table.find_or_add(10, added);
  CHECK_FALSE(added);
  CHECK(again.tid == 10);
  REQUIRE(table.size() == 3);
  CHECK(table.all()[0].tid == 10);
  CHECK(table.all()[1].tid == 20);
  CHECK(table.all()[2].tid == 30);
  table.find(20)->sequence.accept(1, 1);
  CHECK(table.find(20)->sequence.highest() == 1);
  CHECK(table.find(10)->sequence.highest() == 0);
  CHECK(table.find(99) == nullptr);
}

TEST_CASE("the sender table does not reallocate within the capacity it was reset to", "[sequence]") {
  SenderTable table;
  table.reset(16);
  bool added = false;
  table.find_or_add(1, added);
  const SenderState* storage = table.all().data();
  for (Tid tid = 2; tid <= 16; ++tid) table.find_or_add(tid, added);
  CHECK(table.all().data() == storage);
  table.reset(4);
  CHECK(table.size() == 0);
}

// ---- latency -----------------------------------------------------------------------------------------------

TEST_CASE("the summary of 1..100 in any order: min 1, median 50.5, p99 99, max 100", "[latency]") {
  std::vector<double> samples(100);
  std::iota(samples.begin(), samples.end(), 1.0);
  std::reverse(samples.begin(), samples.end());
  const LatencySummary s = summarize_latencies(samples);
  CHECK(s.count == 100);
  CHECK(s.min == 1);
  CHECK(s.median == Approx(50.5));
  CHECK(s.p99 == 99);
  CHECK(s.max == 100);
}

TEST_CASE("the median of an odd count is the middle sample", "[latency]") {
  std::vector<double> samples{5, 1, 3};
  CHECK(summarize_latencies(samples).median == 3);
}

TEST_CASE("p99 is the nearest rank: one outlier in a hundred does not show, two do", "[latency]") {
  std::vector<double> one(100, 10.0);
  one[0] = 1000;
  CHECK(summarize_latencies(one).p99 == 10);
  std::vector<double> two(100, 10.0);
  two[0] = 1000;
  two[1] = 1000;
  CHECK(summarize_latencies(two).p99 == 1000);
}

TEST_CASE("percentiles of a single sample and of none", "[latency]") {
  std::vector<double> single{7.5};
  const LatencySummary s = summarize_latencies(single);
  CHECK(s.min == 7.5);
  CHECK(s.median == 7.5);
  CHECK(s.p99 == 7.5);
  CHECK(s.max == 7.5);
  std::vector<double> none;
  const LatencySummary empty = summarize_latencies(none);
  CHECK(empty.count == 0);
  CHECK(empty.p99 == 0);
  CHECK(percentile_of_sorted({}, 0.5) == 0);
}

TEST_CASE("percentile_of_sorted takes the smallest sample covering the fraction", "[latency]") {
  std::vector<double> sorted(1000);
  std::iota(sorted.begin(), sorted.end(), 1.0);
  CHECK(percentile_of_sorted(sorted, 0.99) == 990);
  CHECK(percentile_of_sorted(sorted, 0.5) == 500);
  CHECK(percentile_of_sorted(sorted, 1.0) == 1000);
  CHECK(percentile_of_sorted(sorted, 0.0001) == 1);
}

// ---- rates ---------------------------------------------------------------------------------------------------

TEST_CASE("a rate is published once a second has passed, over that window", "[rate]") {
  using namespace std::chrono_literals;
  RateMeter meter;
  const RateMeter::Clock::time_point t0 = RateMeter::Clock::now();
  meter.start(t0, 0, 0);
  meter.update(t0 + 500ms, 100, 1000);
  CHECK(meter.read(t0 + 500ms).frames_per_second == 0);  // nothing complete yet
  meter.update(t0 + 2s, 400, 4000);
  const Rates rates = meter.read(t0 + 2s);
  CHECK(rates.frames_per_second == Approx(200));
  CHECK(rates.bytes_per_second == Approx(2000));
  meter.update(t0 + 2500ms, 500, 5000);  // a new window is under way: the last one still shows
  CHECK(meter.read(t0 + 2500ms).frames_per_second == Approx(200));
}

TEST_CASE("a rate not renewed for more than two seconds reads zero", "[rate]") {
  using namespace std::chrono_literals;
  RateMeter meter;
  const RateMeter::Clock::time_point t0 = RateMeter::Clock::now();
  meter.start(t0, 0, 0);
  meter.update(t0 + 1s, 50, 50);
  CHECK(meter.read(t0 + 2s).frames_per_second == Approx(50));
  CHECK(meter.read(t0 + 3500ms).frames_per_second == 0);
}

// ---- wakeup --------------------------------------------------------------------------------------------------

TEST_CASE("a notify after the generation was read ends the wait at once", "[wakeup]") {
  using namespace std::chrono_literals;
  Wakeup wakeup;
  const std::uint64_t seen = wakeup.generation();
  wakeup.notify();
  const auto before = Wakeup::Clock::now();
  wakeup.wait_until(seen, before + 10s);
  CHECK(Wakeup::Clock::now() - before < 5s);
}

TEST_CASE("without a notify the wait ends at its deadline", "[wakeup]") {
  using namespace std::chrono_literals;
  Wakeup wakeup;
  const auto before = Wakeup::Clock::now();
  wakeup.wait_until(wakeup.generation(), before + 30ms);
  CHECK(Wakeup::Clock::now() - before >= 30ms);
}

TEST_CASE("a notify from another thread wakes a sleeping worker", "[wakeup]") {
  using namespace std::chrono_literals;
  Wakeup wakeup;
  const std::uint64_t seen = wakeup.generation();
  std::jthread notifier([&wakeup] {
    std::this_thread::sleep_for(20ms);
    wakeup.notify();
  });
  const auto before = Wakeup::Clock::now();
  wakeup.wait_until(seen, before + 10s);
  CHECK(Wakeup::Clock::now() - before < 5s);
  CHECK(wakeup.generation() != seen);
}
