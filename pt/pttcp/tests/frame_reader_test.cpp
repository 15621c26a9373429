// The pttcp receive parser: frames cut anywhere by the stream come out whole, large ones in place,
// bad streams are refused, an exhausted pool pauses instead of failing.
#include <catch2/catch.hpp>

#include <array>
#include <cstring>
#include <random>
#include <vector>

#include "frame_reader.hpp"

using namespace daqx;
using daqx::pttcp::FrameReader;

namespace {

std::vector<std::byte> make_frame(std::uint32_t total, std::uint32_t target, std::uint8_t fill) {
  FrameHeader h;
  h.total_length = total;
  h.target = target;
  h.function = 3;
  std::array<std::byte, kFrameHeaderSize> header{};
  encode_header(h, header.data());
  std::vector<std::byte> bytes(header.begin(), header.end());
  bytes.resize(total);
  for (std::size_t i = kFrameHeaderSize; i < total; ++i) bytes[i] = std::byte(static_cast<std::uint8_t>(fill + i));
  return bytes;
}

// Feeds `stream` to the reader in reads of random sizes up to max_read (as a socket would), or of max_read when
// `whole` (a socket that always has the bytes), and collects the frames; `reads` counts the reads.
std::vector<Frame> feed(FrameReader& reader, const std::vector<std::byte>& stream, std::size_t max_read,
                        FrameReader::Result* last = nullptr, std::size_t* reads = nullptr, bool whole = false) {
  std::mt19937 random(42);
  std::vector<Frame> frames;
  std::size_t at = 0;
  for (;;) {
    Frame frame;
    FrameReader::Result result = reader.next(frame);
    if (result == FrameReader::Result::frame) {
      frames.push_back(std::move(frame));
      continue;
    }
    if (result != FrameReader::Result::need_more || at == stream.size()) {
      if (last != nullptr) *last = result;
      return frames;
    }
    iovec vectors[64];
    int count = reader.read_target(vectors, 64);
    std::size_t want = whole ? max_read : std::uniform_int_distribution<std::size_t>(1, max_read)(random);
    if (reads != nullptr) ++*reads;
    std::size_t moved = 0;
    for (int v = 0; v < count && at < stream.size() && moved < want; ++v) {
      std::size_t n = std::min({vectors[v].iov_len, stream.size() - at, want - moved});
      std::memcpy(vectors[v].iov_base, stream.data() + at, n);
      at += n;
      moved += n;
      if (n < vectors[v].iov_len) break;
    }
    reader.advance(moved);
  }
}

std::vector<std::byte> chain_bytes(const mem::Ref& ref) {
  std::vector<std::byte> out;
  for (const mem::Block* b = ref.head(); b != nullptr; b = b->next()) out.insert(out.end(), b->data(), b->data() + b->size());
  return out;
}

mem::PoolConfig pool_config() { return mem::PoolConfig::geometric("test/recv", 256, 1u << 20, 1u << 20, 64u << 20); }

}  // namespace

TEST_CASE("frames cut anywhere by the stream come out whole and in order", "[pttcp][reader]") {
  mem::Pool pool(pool_config(), std::make_shared<mem::HeapAllocator>());
  FrameReader reader(pool, 64 * 1024, 16 * 1024, kDefaultMaxFrameSize);
  std::vector<std::byte> stream;
  std::vector<std::vector<std::byte>> sent;
  std::mt19937 random(7);
  for (int i = 0; i < 500; ++i) {
    // Sizes from a bare header to well past the copy threshold and the largest block.
    std::uint32_t total = i % 50 == 49 ? 3u << 20 : std::uniform_int_distribution<std::uint32_t>(32, 40000)(random);
    sent.push_back(make_frame(total, static_cast<Tid>(i + 1), static_cast<std::uint8_t>(i)));
    stream.insert(stream.end(), sent.back().begin(), sent.back().end());
  }
  std::vector<Frame> frames = feed(reader, stream, 100000);
  REQUIRE(frames.size() == sent.size());
  for (std::size_t i = 0; i < frames.size(); ++i) {
    INFO("frame " << i);
    CHECK(frames[i].header.target == i + 1);
    CHECK(frames[i].header.total_length == sent[i].size());
    CHECK(frames[i].data.total_size() == sent[i].size());
    CHECK(chain_bytes(frames[i].data) == sent[i]);
  }
  CHECK_FALSE(reader.mid_frame());
  frames.clear();
  CHECK(pool.blocks_in_use() == 0);
}

TEST_CASE("a large frame is read into its own blocks, chained past the largest block", "[pttcp][reader]") {
  mem::Pool pool(pool_config(), std::make_shared<mem::HeapAllocator>());
  FrameReader reader(pool, 64 * 1024, 16 * 1024, kDefaultMaxFrameSize);
  std::vector<std::byte> frame = make_frame(5u << 20, 9, 1);
  std::vector<Frame> frames = feed(reader, frame, 1u << 20);
  REQUIRE(frames.size() == 1);
  CHECK(frames[0].data.chain_length() == 5);
  CHECK(chain_bytes(frames[0].data) == frame);
}

TEST_CASE("a stream of large frames takes one read per frame: the next header comes with a payload's end",
          "[pttcp][reader]") {
  mem::Pool pool(pool_config(), std::make_shared<mem::HeapAllocator>());
  FrameReader reader(pool, 64 * 1024, 16 * 1024, kDefaultMaxFrameSize);
  std::vector<std::byte> stream;
  std::vector<std::vector<std::byte>> sent;
  for (int i = 0; i < 40; ++i) {
    sent.push_back(make_frame(i % 2 == 0 ? 40000 : 17000, static_cast<Tid>(i + 1), static_cast<std::uint8_t>(i)));
    stream.insert(stream.end(), sent.back().begin(), sent.back().end());
  }
  std::size_t reads = 0;
  std::vector<Frame> frames = feed(reader, stream, 1u << 20, nullptr, &reads, true);
  REQUIRE(frames.size() == sent.size());
  for (std::size_t i = 0; i < frames.size(); ++i) CHECK(chain_bytes(frames[i].data) == sent[i]);
  // The first read fills the staging buffer (a frame and a half), then one read per frame: the rest of its
  // payload and the next header. Reading the header on its own would take two per frame.
  CHECK(reads <= sent.size() + 1);
  CHECK_FALSE(reader.mid_frame());
  frames.clear();
  CHECK(pool.blocks_in_use() == 0);
}

TEST_CASE("a stream that is not daqx frames is refused with the reason", "[pttcp][reader]") {
  mem::Pool pool(pool_config(), std::make_shared<mem::HeapAllocator>());
  SECTION("garbage") {
    FrameReader reader(pool, 64 * 1024, 16 * 1024, kDefaultMaxFrameSize);
    std::vector<std::byte> garbage(100, std::byte{0x41});
    FrameReader::Result last{};
    CHECK(feed(reader, garbage, 100, &last).empty());
    CHECK(last == FrameReader::Result::bad_frame);
    CHECK(reader.error() == "bad magic (not a daqx frame)");
  }
  SECTION("a length beyond the maximum frame size") {
    FrameReader reader(pool, 64 * 1024, 16 * 1024, 1u << 20);
    FrameHeader h;
    h.total_length = 0xfffffff0u;
    std::array<std::byte, kFrameHeaderSize> fixed{};
    encode_header(h, fixed.data());
    std::vector<std::byte> header(fixed.begin(), fixed.end());
    FrameReader::Result last{};
    CHECK(feed(reader, header, 32, &last).empty());
    CHECK(last == FrameReader::Result::bad_frame);
    CHECK(reader.error() == "total length above the maximum frame size");
  }
  CHECK(pool.blocks_in_use() == 0);
}

TEST_CASE("an exhausted receive pool pauses the reader, which resumes when blocks come back", "[pttcp][reader]") {
  mem::PoolConfig tiny;
  tiny.name = "test/tiny";
  tiny.classes = {{1024, 2, 1, 1}};
  mem::Pool pool(tiny, std::make_shared<mem::HeapAllocator>());
  FrameReader reader(pool, 64 * 1024, 16 * 1024, kDefaultMaxFrameSize);
  std::vector<std::byte> stream;
  for (int i = 0; i < 3; ++i) {
    auto f = make_frame(1000, 1, 0);
    stream.insert(stream.end(), f.begin(), f.end());
  }
  FrameReader::Result last{};
  std::vector<Frame> frames = feed(reader, stream, 3000, &last);
  CHECK(frames.size() == 2);
  CHECK(last == FrameReader::Result::no_memory);
  CHECK(reader.mid_frame());
  frames.pop_back();  // the application releases one
  Frame third;
  CHECK(reader.next(third) == FrameReader::Result::frame);
  CHECK(third.header.total_length == 1000);
}
