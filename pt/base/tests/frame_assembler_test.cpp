// Messages back into frames: a frame that is a whole message comes out as its buffer, frames packed into one
// message as views of it (no copy), a frame spread over messages as a chain; every malformed stream is refused
// with its reason; and when views run out, receiving waits instead of losing anything.
#include <catch2/catch.hpp>

#include <cstring>
#include <vector>

#include "daqx/mempool/allocator.hpp"
#include "daqx/mempool/pool.hpp"
#include "daqx/pt/frame_assembler.hpp"

using namespace daqx;
using pt::FrameAssembler;

namespace {

mem::Pool make_pool(std::size_t views = 64) {
  mem::PoolConfig config;
  config.name = "test/assembler";
  config.classes = {{4096, 64, 1, 1}};
  config.views = views;
  return mem::Pool(config, std::make_shared<mem::HeapAllocator>());
}

// Writes a frame of `total` bytes (header, then bytes counting up from `first`) at `at`.
void write_frame(std::byte* at, std::uint32_t total, std::uint16_t function, std::uint16_t magic = kFrameMagic) {
  FrameHeader h;
  h.total_length = total;
  h.target = 7;
  h.function = function;
  encode_header(h, at);
  detail::store_le<std::uint16_t>(at + frame_offset::magic, magic);
  for (std::size_t i = kFrameHeaderSize; i < total; ++i) at[i] = static_cast<std::byte>((function + i) & 0xff);
}

// A message (a 4 KiB pool block) holding the given frame sizes back to back.
mem::Ref message(mem::Pool& pool, const std::vector<std::uint32_t>& frames, std::size_t& length) {
  mem::Ref m = pool.allocate(4096);
  REQUIRE(m);
  length = 0;
  std::uint16_t function = 1;
  for (std::uint32_t total : frames) {
    write_frame(m.data() + length, total, function++);
    length += total;
  }
  return m;
}

// Reads a whole frame out of its chain.
std::vector<std::byte> bytes_of(const Frame& frame) {
  std::vector<std::byte> out;
  for (const mem::Block* b = frame.data.head(); b != nullptr; b = b->next()) out.insert(out.end(), b->data(), b->data() + b->size());
  return out;
}

}  // namespace

TEST_CASE("a frame that is a whole message comes out as that message's buffer", "[pt][assembler]") {
  mem::Pool pool = make_pool();
  FrameAssembler assembler;
  std::size_t length = 0;
  mem::Ref m = message(pool, {100}, length);
  const std::byte* buffer = m.data();
  assembler.push(std::move(m), length);
  Frame frame;
  REQUIRE(assembler.next(frame) == FrameAssembler::Result::frame);
  CHECK(frame.header.total_length == 100);
  CHECK(frame.data.data() == buffer);
  CHECK_FALSE(frame.data.head()->is_view());
  CHECK(assembler.messages_done() == 1);
  CHECK(assembler.next(frame) == FrameAssembler::Result::need_more);
}

TEST_CASE("the frames of a small message, alone or packed, are copied into the small-frame pool and the message's "
          "buffer goes back at once, while frames of larger messages are handed on as they are",
          "[pt][assembler]") {
  mem::Pool pool = make_pool();
  mem::Pool small = make_pool();
  FrameAssembler assembler;
  assembler.copy_small_frames(&small, 200);
  const auto push = [&](const std::vector<std::uint32_t>& frames) {
    std::size_t length = 0;
    mem::Ref m = message(pool, frames, length);
    assembler.push(std::move(m), length);
  };
  push({100});
  Frame copied;
  REQUIRE(assembler.next(copied) == FrameAssembler::Result::frame);
  CHECK(pool.blocks_in_use() == 0);  // the receive buffer is back while the application keeps the frame
  CHECK(small.blocks_in_use() == 1);
  CHECK(copied.data.total_size() == 100);
  std::vector<std::byte> expected(100);
  write_frame(expected.data(), 100, 1);
  CHECK(bytes_of(copied) == expected);

  push({300});  // above the limit: the buffer itself
  Frame large;
  REQUIRE(assembler.next(large) == FrameAssembler::Result::frame);
  CHECK(pool.blocks_in_use() == 1);
  CHECK(small.blocks_in_use() == 1);

  push({64, 64});  // packed in a small message: copies, and the buffer back once both are out
  Frame first, second;
  REQUIRE(assembler.next(first) == FrameAssembler::Result::frame);
  CHECK(pool.blocks_in_use() == 2);
  REQUIRE(assembler.next(second) == FrameAssembler::Result::frame);
  CHECK(pool.blocks_in_use() == 1);
  CHECK(small.blocks_in_use() == 3);
  CHECK_FALSE(first.data.head()->is_view());
  std::vector<std::byte> expected_second(64);
  write_frame(expected_second.data(), 64, 2);
  CHECK(bytes_of(second) == expected_second);
  CHECK(assembler.messages_done() == 3);
  first.data.reset();
  second.data.reset();

  push({64, 64, 100});  // packed in a message above the limit: views into the buffer
  Frame view_a, view_b, view_c;
  REQUIRE(assembler.next(view_a) == FrameAssembler::Result::frame);
  REQUIRE(assembler.next(view_b) == FrameAssembler::Result::frame);
  REQUIRE(assembler.next(view_c) == FrameAssembler::Result::frame);
  CHECK(view_a.data.head()->is_view());
  CHECK(view_c.data.head()->is_view());
  CHECK(small.blocks_in_use() == 1);

  // With the small-frame pool empty, a small frame is handed on as its buffer: nothing waits for it.
  std::vector<mem::Ref> taken;
  while (mem::Ref block = small.allocate(100)) taken.push_back(std::move(block));
  push({100});
  Frame uncopied;
  REQUIRE(assembler.next(uncopied) == FrameAssembler::Result::frame);
  CHECK(uncopied.header.total_length == 100);
  CHECK(pool.blocks_in_use() == 3);
}

TEST_CASE("frames packed into one message come out one by one as windows into its buffer, not copies",
          "[pt][assembler]") {
  mem::Pool pool = make_pool();
  FrameAssembler assembler;
  std::size_t length = 0;
  mem::Ref m = message(pool, {64, 1000, 40, 2000}, length);
  const std::byte* buffer = m.data();
  assembler.push(std::move(m), length);
  std::vector<Frame> frames(4);
  std::size_t offset = 0;
  for (std::size_t i = 0; i < frames.size(); ++i) {
    REQUIRE(assembler.next(frames[i]) == FrameAssembler::Result::frame);
    CHECK(frames[i].header.function == i + 1);
    CHECK(frames[i].data.head()->is_view());
    CHECK(frames[i].data.data() == buffer + offset);  // the same memory
    CHECK(frames[i].data.total_size() == frames[i].header.total_length);
    offset += frames[i].header.total_length;
  }
  CHECK(assembler.messages_done() == 1);
  CHECK(pool.views_in_use() == 4);
  CHECK(pool.blocks_in_use() == 1);  // the buffer lives while a frame shows it
  frames[1].data.reset();
  frames[0].data.reset();
  frames[3].data.reset();
  CHECK(pool.blocks_in_use() == 1);
  frames[2].data.reset();
  CHECK(pool.views_in_use() == 0);
  CHECK(pool.blocks_in_use() == 0);  // the last view gave the buffer back
}

TEST_CASE("a frame spread over messages is chained from them, and the one after it follows in its last one",
          "[pt][assembler]") {
  mem::Pool pool = make_pool();
  FrameAssembler assembler;
  // One frame of 9000 bytes written across three 4 KiB buffers, then a 100-byte frame in the third.
  std::vector<std::byte> stream(9100);
  write_frame(stream.data(), 9000, 1);
  write_frame(stream.data() + 9000, 100, 2);
  std::size_t sent = 0;
  for (std::size_t length : {4096u, 4096u, 908u}) {
    mem::Ref m = pool.allocate(4096);
    std::memcpy(m.data(), stream.data() + sent, length);
    assembler.push(std::move(m), length);
    sent += length;
  }
  Frame big, small;
  REQUIRE(assembler.next(big) == FrameAssembler::Result::frame);
  CHECK(big.data.chain_length() == 3);
  CHECK(bytes_of(big) == std::vector<std::byte>(stream.begin(), stream.begin() + 9000));
  CHECK_FALSE(big.data.head()->is_view());  // the first message was all this frame's
  REQUIRE(assembler.next(small) == FrameAssembler::Result::frame);
  CHECK(bytes_of(small) == std::vector<std::byte>(stream.begin() + 9000, stream.end()));
  CHECK(assembler.messages_done() == 3);
  CHECK_FALSE(assembler.mid_frame());
}

TEST_CASE("a malformed stream is refused with its reason, and nothing it held stays taken", "[pt][assembler]") {
  mem::Pool pool = make_pool();
  Frame frame;
  auto refused = [&](std::uint32_t max_frame_size, auto&& write, std::size_t length) {
    FrameAssembler assembler(max_frame_size);
    mem::Ref m = pool.allocate(4096);
    write(m.data());
    assembler.push(std::move(m), length);
    Frame out;
    FrameAssembler::Result result = FrameAssembler::Result::frame;
    while (result == FrameAssembler::Result::frame) result = assembler.next(out);
    out.data.reset();
    REQUIRE(result == FrameAssembler::Result::bad);
    return assembler.error();
  };
  CHECK_THAT(refused(kDefaultMaxFrameSize, [](std::byte* at) { write_frame(at, 64, 1, 0x1234); }, 64),
             Catch::Contains("bad magic"));
  CHECK_THAT(refused(1024, [](std::byte* at) { write_frame(at, 2048, 1); }, 4096),
             Catch::Contains("maximum frame size"));
  CHECK_THAT(refused(kDefaultMaxFrameSize, [](std::byte* at) {
               write_frame(at, 100, 1);
               std::memset(at + 100, 0x5a, 100);  // garbage after a frame
             }, 200),
             Catch::Contains("bad magic"));
  CHECK_THAT(refused(kDefaultMaxFrameSize, [](std::byte* at) { write_frame(at, 100, 1); }, 116),
             Catch::Contains("shorter than a frame header") && Catch::Contains("what follows a frame"));
  CHECK_THAT(refused(kDefaultMaxFrameSize, [](std::byte*) {}, 0), Catch::Contains("shorter than a frame header"));
  CHECK(pool.blocks_in_use() == 0);
  CHECK(pool.views_in_use() == 0);
}

TEST_CASE("when the pool has no view left, frames wait in their message and come out once one is back",
          "[pt][assembler]") {
  mem::Pool pool = make_pool(2);
  FrameAssembler assembler;
  std::size_t length = 0;
  mem::Ref m = message(pool, {100, 100, 100}, length);
  assembler.push(std::move(m), length);
  Frame a, b, c;
  REQUIRE(assembler.next(a) == FrameAssembler::Result::frame);
  REQUIRE(assembler.next(b) == FrameAssembler::Result::frame);
  CHECK(assembler.next(c) == FrameAssembler::Result::no_views);
  CHECK(assembler.messages_done() == 0);  // its buffer still holds a frame nobody took
  a.data.reset();
  REQUIRE(assembler.next(c) == FrameAssembler::Result::frame);
  CHECK(c.header.function == 3);
  CHECK(assembler.messages_done() == 1);
}
