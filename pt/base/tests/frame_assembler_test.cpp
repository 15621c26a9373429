// Messages back into frames: a frame in one message, a frame in several (chained, not copied), and every
// malformed stream refused with its reason.
#include <catch2/catch.hpp>

#include <cstring>

#include "daqx/mempool/allocator.hpp"
#include "daqx/mempool/pool.hpp"
#include "daqx/pt/frame_assembler.hpp"

using namespace daqx;
using pt::FrameAssembler;

namespace {

mem::Pool make_pool() {
  mem::PoolConfig config;
  config.name = "test/assembler";
  config.classes = {{4096, 64, 1, 1}};
  return mem::Pool(config, std::make_shared<mem::HeapAllocator>());
}

// A message holding a frame header for a frame of total bytes (or `bytes` of payload only when header is false).
mem::Ref message(mem::Pool& pool, std::size_t bytes, std::uint32_t total, bool header, std::uint16_t magic = kFrameMagic) {
  mem::Ref m = pool.allocate(4096);
  REQUIRE(m);
  std::memset(m.data(), 0x5a, bytes);
  if (header) {
    FrameHeader h;
    h.total_length = total;
    h.target = 7;
    encode_header(h, m.data());
    detail::store_le<std::uint16_t>(m.data() + frame_offset::magic, magic);
  }
  return m;
}

}  // namespace

TEST_CASE("a frame that fits one message comes out whole", "[pt][assembler]") {
  mem::Pool pool = make_pool();
  FrameAssembler assembler;
  Frame frame;
  CHECK(assembler.add(message(pool, 100, 100, true), 100, frame) == FrameAssembler::Result::frame);
  CHECK(frame.header.total_length == 100);
  CHECK(frame.header.target == 7);
  CHECK(frame.data.total_size() == 100);
  CHECK_FALSE(assembler.mid_frame());
}

TEST_CASE("a frame cut into messages is chained from them, not copied", "[pt][assembler]") {
  mem::Pool pool = make_pool();
  FrameAssembler assembler;
  Frame frame;
  mem::Ref first = message(pool, 4096, 10000, true);
  const std::byte* first_bytes = first.data();
  CHECK(assembler.add(std::move(first), 4096, frame) == FrameAssembler::Result::need_more);
  CHECK(assembler.mid_frame());
  CHECK(assembler.add(message(pool, 4096, 0, false), 4096, frame) == FrameAssembler::Result::need_more);
  CHECK(assembler.add(message(pool, 1808, 0, false), 1808, frame) == FrameAssembler::Result::frame);
  CHECK(frame.data.total_size() == 10000);
  CHECK(frame.data.chain_length() == 3);
  CHECK(frame.data.data() == first_bytes);  // the first message's block is the frame's head
  CHECK_FALSE(assembler.mid_frame());
}

TEST_CASE("a malformed stream is refused with its reason", "[pt][assembler]") {
  mem::Pool pool = make_pool();
  Frame frame;
  {
    FrameAssembler assembler;
    CHECK(assembler.add(message(pool, 64, 64, true, 0x1234), 64, frame) == FrameAssembler::Result::bad);
    CHECK_THAT(assembler.error(), Catch::Contains("bad magic"));
  }
  {
    FrameAssembler assembler(1024);
    CHECK(assembler.add(message(pool, 64, 4096, true), 64, frame) == FrameAssembler::Result::bad);
    CHECK_THAT(assembler.error(), Catch::Contains("maximum frame size"));
  }
  {
    FrameAssembler assembler;
    CHECK(assembler.add(message(pool, 200, 100, true), 200, frame) == FrameAssembler::Result::bad);
    CHECK_THAT(assembler.error(), Catch::Contains("runs past the end of its frame"));
  }
  {
    FrameAssembler assembler;
    CHECK(assembler.add(message(pool, 100, 150, true), 100, frame) == FrameAssembler::Result::need_more);
    CHECK(assembler.add(message(pool, 100, 0, false), 100, frame) == FrameAssembler::Result::bad);
    assembler.reset();  // the half frame goes back to the pool
    CHECK_FALSE(assembler.mid_frame());
  }
  {
    FrameAssembler assembler;
    CHECK(assembler.add(message(pool, 16, 0, false), 16, frame) == FrameAssembler::Result::bad);
    CHECK_THAT(assembler.error(), Catch::Contains("shorter than a frame header"));
  }
  CHECK(pool.stats().blocks_used() == 0);
}
