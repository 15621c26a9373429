// Multipart messages: the part table written and checked, parts linked into one frame and given back, and a
// received frame split into its parts without a copy (whole blocks taken, views made) or left as it was.
#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "daqx/api/multipart.hpp"
#include "daqx/mempool/allocator.hpp"
#include "daqx/mempool/misuse.hpp"
#include "daqx/mempool/pool.hpp"

namespace daqx {
namespace {

// Every case fails on a misuse of buffers (a change to a shared block, a bad window), which release builds only log.
struct MisuseFails {
  MisuseFails() {
    previous = mem::set_misuse_handler(
        [](mem::Misuse, std::string_view detail) { FAIL_CHECK("buffer misuse: " << std::string(detail)); });
  }
  ~MisuseFails() { mem::set_misuse_handler(previous); }
  MisuseFails(const MisuseFails&) = delete;
  MisuseFails& operator=(const MisuseFails&) = delete;
  mem::MisuseHandler previous;
};

mem::Pool make_pool(std::size_t views) {
  mem::PoolConfig config = mem::PoolConfig::geometric("test/multipart", 64, 4096, 1u << 20, 8u << 20);
  config.views = views;
  return mem::Pool(config, std::make_shared<mem::HeapAllocator>());
}

// Part `index` of `bytes`, each byte saying which part it is and where it stands.
std::byte part_byte(std::size_t index, std::size_t at) { return static_cast<std::byte>((index * 31 + at * 7) & 0xff); }

mem::Ref make_part(mem::Pool& pool, std::size_t index, std::size_t bytes) {
  if (bytes == 0) return {};
  mem::Ref part = pool.allocate_chain(bytes);
  REQUIRE(part);
  std::size_t at = 0;
  for (mem::Block* block = part.head(); block != nullptr; block = block->next())
    for (std::size_t i = 0; i < block->size(); ++i) block->data()[i] = part_byte(index, at++);
  return part;
}

std::vector<mem::Ref> make_parts(mem::Pool& pool, const std::vector<std::size_t>& sizes) {
  std::vector<mem::Ref> parts;
  for (std::size_t i = 0; i < sizes.size(); ++i) parts.push_back(make_part(pool, i, sizes[i]));
  return parts;
}

// How part `index` differs from what make_part wrote; empty when it does not.
std::string difference(const mem::Ref& part, std::size_t index, std::size_t bytes) {
  const std::string which = "part " + std::to_string(index) + ": ";
  if (bytes == 0) return part ? which + "not empty" : "";
  if (!part || part.total_size() != bytes)
    return which + std::to_string(part ? part.total_size() : 0) + " bytes, sent " + std::to_string(bytes);
  std::size_t at = 0;
  for (const mem::Block* block = part.head(); block != nullptr; block = block->next())
    for (std::size_t i = 0; i < block->size(); ++i, ++at)
      if (block->data()[i] != part_byte(index, at)) return which + "byte " + std::to_string(at) + " differs";
  return {};
}

// The frame send_parts would send: a head of header and table, the parts linked after it.
Frame linked_message(mem::Pool& pool, std::vector<mem::Ref>& parts) {
  REQUIRE(check_parts(parts) == MultipartCheck::ok);
  Frame frame;
  frame.data = pool.allocate_chain(kFrameHeaderSize + part_table_size(parts.size()));
  REQUIRE(frame.data);
  write_part_table(parts, frame.data);
  link_parts(frame.data, parts);
  frame.header.flags = frame_flags::multipart;
  frame.header.total_length = static_cast<std::uint32_t>(frame.data.total_size());
  encode_header(frame.header, frame.data.data());
  return frame;
}

// The bytes of a chain, in order.
std::vector<std::byte> bytes_of(const mem::Ref& chain) {
  std::vector<std::byte> bytes;
  for (const mem::Block* block = chain.head(); block != nullptr; block = block->next())
    bytes.insert(bytes.end(), block->data(), block->data() + block->size());
  return bytes;
}

// The same bytes as they might arrive: fresh blocks of the given sizes, then of the pool's largest for the rest.
Frame received_as(mem::Pool& pool, const std::vector<std::byte>& bytes, std::vector<std::size_t> splits,
                  std::uint8_t flags = frame_flags::multipart) {
  Frame frame;
  std::size_t at = 0;
  for (std::size_t i = 0; at < bytes.size(); ++i) {
    const std::size_t size = std::min(i < splits.size() ? splits[i] : pool.max_block_size(), bytes.size() - at);
    mem::Ref block = pool.allocate(size);
    REQUIRE(block);
    std::copy_n(bytes.data() + at, size, block.data());
    at += size;
    frame.data.append(std::move(block));
  }
  frame.header = decode_header(frame.data.data());
  frame.header.flags = flags;
  return frame;
}

std::vector<std::byte> message_bytes(mem::Pool& pool, const std::vector<std::size_t>& sizes) {
  std::vector<mem::Ref> parts = make_parts(pool, sizes);
  Frame frame = linked_message(pool, parts);
  return bytes_of(frame.data);
}

void check_parts_arrived(const std::vector<mem::Ref>& parts, const std::vector<std::size_t>& sizes) {
  REQUIRE(parts.size() == sizes.size());
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    const std::string problem = difference(parts[i], i, sizes[i]);
    INFO(problem);
    CHECK(problem.empty());
  }
}

// What a frame is, to tell that a failed take_parts left it as it was.
struct Shape {
  const mem::Block* head;
  std::size_t blocks;
  std::vector<std::byte> bytes;
  explicit Shape(const Frame& frame)
      : head(frame.data.head()), blocks(frame.data.chain_length()), bytes(bytes_of(frame.data)) {}
  bool same(const Frame& frame) const {
    return frame.data.head() == head && frame.data.chain_length() == blocks && bytes_of(frame.data) == bytes;
  }
};

// A frame image with the table's words set by hand (count, reserved, lengths) and `data` bytes after it.
std::vector<std::byte> image(std::uint32_t count, std::uint32_t reserved, const std::vector<std::uint32_t>& lengths,
                             std::size_t data) {
  std::array<std::byte, 256> buffer{};  // where it is written: a fixed array, as the compiler can see its size
  const std::size_t size = kFrameHeaderSize + part_table_size(lengths.size()) + data;
  REQUIRE(size <= buffer.size());
  FrameHeader header;
  header.flags = frame_flags::multipart;
  header.total_length = static_cast<std::uint32_t>(size);
  encode_header(header, buffer.data());
  std::byte* table = buffer.data() + kFrameHeaderSize;
  detail::store_le<std::uint32_t>(table + part_table_offset::count, count);
  detail::store_le<std::uint32_t>(table + part_table_offset::reserved, reserved);
  for (std::size_t i = 0; i < lengths.size(); ++i)
    detail::store_le<std::uint32_t>(table + part_table_offset::lengths + 4 * i, lengths[i]);
  return {buffer.begin(), buffer.begin() + static_cast<std::ptrdiff_t>(size)};
}

}  // namespace

TEST_CASE_METHOD(MisuseFails, "parts passed as their own blocks come back as those very blocks, in order, with no view made",
          "[multipart]") {
  mem::Pool pool = make_pool(16);
  const std::vector<std::size_t> sizes{24, 4096, 10000, 0, 1};
  std::vector<mem::Ref> parts = make_parts(pool, sizes);
  std::vector<const mem::Block*> heads;
  for (const mem::Ref& part : parts) heads.push_back(part.head());
  Frame frame = linked_message(pool, parts);
  for (const mem::Ref& part : parts) CHECK(!part);

  std::vector<mem::Ref> received;
  REQUIRE(take_parts(frame, received) == MultipartCheck::ok);
  CHECK(!frame.data);
  CHECK(frame.header.flags == frame_flags::multipart);
  check_parts_arrived(received, sizes);
  for (std::size_t i = 0; i < sizes.size(); ++i) CHECK(received[i].head() == heads[i]);
  CHECK(pool.views_in_use() == 0);
  received.clear();
  CHECK(pool.blocks_in_use() == 0);
}

TEST_CASE_METHOD(MisuseFails, "parts that arrived in one buffer come as views of it, and the buffer goes back with the last view",
          "[multipart]") {
  mem::Pool pool = make_pool(16);
  const std::vector<std::size_t> sizes{16, 100, 0, 7, 900};
  Frame frame = received_as(pool, message_bytes(pool, sizes), {});
  REQUIRE(frame.data.chain_length() == 1);
  std::vector<mem::Ref> received;
  REQUIRE(take_parts(frame, received) == MultipartCheck::ok);
  check_parts_arrived(received, sizes);
  CHECK(pool.views_in_use() == 4);
  CHECK(pool.blocks_in_use() == 1);
  received.clear();
  CHECK(pool.views_in_use() == 0);
  CHECK(pool.blocks_in_use() == 0);
}

TEST_CASE_METHOD(MisuseFails, "a part split across received blocks comes as a chain of views, and the table may straddle blocks too",
          "[multipart]") {
  mem::Pool pool = make_pool(64);
  const std::vector<std::size_t> sizes{40, 3000, 5, 2500};
  const std::vector<std::byte> bytes = message_bytes(pool, sizes);
  // Cuts inside the table's count, in part 0, around a block that holds only part 1's middle (taken whole), at
  // part 2's end, and into blocks that hold only part 3 (taken whole).
  const std::size_t table_end = kFrameHeaderSize + part_table_size(sizes.size());
  const std::size_t part3 = table_end + 40 + 3000 + 5;
  Frame frame = received_as(pool, bytes, {kFrameHeaderSize + 6, table_end + 100 - (kFrameHeaderSize + 6), 1000,
                                          part3 - (table_end + 1100), 1000, 1000});
  REQUIRE(frame.data.chain_length() == 7);
  std::vector<mem::Ref> received;
  REQUIRE(take_parts(frame, received) == MultipartCheck::ok);
  check_parts_arrived(received, sizes);
  REQUIRE(received[1].chain_length() == 3);
  CHECK(received[1].head()->is_view());
  CHECK(!received[1].head()->next()->is_view());
  CHECK(received[1].head()->next()->next()->is_view());
  CHECK(received[3].chain_length() == 3);
  for (const mem::Block* block = received[3].head(); block != nullptr; block = block->next()) CHECK(!block->is_view());
  CHECK(pool.views_in_use() == 4);
  received.clear();
  CHECK(pool.views_in_use() == 0);
  CHECK(pool.blocks_in_use() == 0);
}

TEST_CASE_METHOD(MisuseFails, "a thousand small parts go and come back intact and in order, the parts vector reused", "[multipart]") {
  mem::Pool pool = make_pool(2048);
  const std::vector<std::size_t> sizes(1000, 64);
  std::vector<mem::Ref> received;
  for (int round = 0; round < 2; ++round) {
    Frame frame = received_as(pool, message_bytes(pool, sizes), {4096, 4096});
    REQUIRE(take_parts(frame, received) == MultipartCheck::ok);
    check_parts_arrived(received, sizes);
    const std::size_t capacity = received.capacity();
    received.clear();
    CHECK(received.capacity() == capacity);
    CHECK(pool.blocks_in_use() == 0);
  }
}

TEST_CASE_METHOD(MisuseFails, "a malformed table is refused with its reason and the frame is left as it was", "[multipart]") {
  mem::Pool pool = make_pool(16);
  struct Case {
    const char* what;
    std::vector<std::byte> bytes;
    MultipartCheck expected;
  };
  std::vector<std::byte> header_only = image(1, 0, {}, 0);
  header_only.resize(kFrameHeaderSize + 6);
  const std::vector<Case> cases{
      {"cut inside count and reserved", header_only, MultipartCheck::table_cut},
      {"count 0", image(0, 0, {}, 10), MultipartCheck::bad_count},
      {"count above kMaxParts", image(kMaxParts + 1, 0, {}, 10), MultipartCheck::bad_count},
      {"reserved set", image(1, 1, {10}, 10), MultipartCheck::reserved_set},
      {"lengths cut by the frame's end", image(3, 0, {4}, 0), MultipartCheck::table_cut},
      {"lengths longer than the payload", image(2, 0, {10, 11}, 20), MultipartCheck::lengths_mismatch},
      {"lengths shorter than the payload", image(2, 0, {10, 9}, 20), MultipartCheck::lengths_mismatch},
      {"lengths that overflow 32 bits", image(2, 0, {0xffffffffu, 11}, 10), MultipartCheck::lengths_mismatch},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    for (const std::vector<std::size_t>& splits : {std::vector<std::size_t>{}, std::vector<std::size_t>{33, 3, 5}}) {
      Frame frame = received_as(pool, c.bytes, splits);
      const Shape before(frame);
      std::vector<mem::Ref> received(2);
      CHECK(take_parts(frame, received) == c.expected);
      CHECK(received.empty());
      CHECK(before.same(frame));
    }
  }
  Frame plain = received_as(pool, image(1, 0, {10}, 10), {}, 0);
  std::vector<mem::Ref> received;
  CHECK(take_parts(plain, received) == MultipartCheck::not_multipart);
  CHECK(plain.data);
  CHECK(to_string(MultipartCheck::lengths_mismatch) == "the part lengths do not add up to the payload after the table");
  plain.data.reset();
  CHECK(pool.blocks_in_use() == 0);
}

TEST_CASE_METHOD(MisuseFails, "a shared chain cannot be split and is left as it was, a shared single block is split into views",
          "[multipart]") {
  mem::Pool pool = make_pool(16);
  const std::vector<std::size_t> sizes{8, 8};
  const std::vector<std::byte> bytes = message_bytes(pool, sizes);
  Frame chained = received_as(pool, bytes, {kFrameHeaderSize + 4});
  mem::Ref other_owner = chained.data.share();
  const Shape before(chained);
  std::vector<mem::Ref> received;
  CHECK(take_parts(chained, received) == MultipartCheck::shared_block);
  CHECK(before.same(chained));

  Frame single = received_as(pool, bytes, {});
  mem::Ref second_owner = single.data.share();
  REQUIRE(take_parts(single, received) == MultipartCheck::ok);
  check_parts_arrived(received, sizes);
  CHECK(bytes_of(second_owner) == bytes);  // the other owner still sees the whole frame
}

TEST_CASE_METHOD(MisuseFails, "with no view left the frame is left whole, and it splits once views are back", "[multipart]") {
  mem::Pool pool = make_pool(4);
  const std::vector<std::size_t> sizes{10, 20, 30, 40};
  Frame frame = received_as(pool, message_bytes(pool, sizes), {});
  const Shape before(frame);
  mem::Ref held = frame.data.view(0, 8);  // one of the four views taken elsewhere
  std::vector<mem::Ref> received;
  CHECK(take_parts(frame, received) == MultipartCheck::no_views);
  CHECK(before.same(frame));
  CHECK(pool.views_in_use() == 1);
  held.reset();
  REQUIRE(take_parts(frame, received) == MultipartCheck::ok);
  check_parts_arrived(received, sizes);
  received.clear();
  CHECK(pool.blocks_in_use() == 0);
}

TEST_CASE_METHOD(MisuseFails, "parts to send are checked: count, shared blocks only at the very end, no empty block, 32-bit length",
          "[multipart]") {
  mem::Pool pool = make_pool(4);
  std::vector<mem::Ref> none;
  CHECK(check_parts(none) == MultipartCheck::bad_count);
  std::vector<mem::Ref> too_many(kMaxParts + 1);
  CHECK(check_parts(too_many) == MultipartCheck::bad_count);

  std::vector<mem::Ref> parts = make_parts(pool, {10, 10, 0});
  mem::Ref shared_last = parts[1].share();
  CHECK(check_parts(parts) == MultipartCheck::ok);  // the last block of the message (part 2 is empty)
  mem::Ref shared_first = parts[0].share();
  CHECK(check_parts(parts) == MultipartCheck::shared_block);
  shared_first.reset();
  shared_last.reset();

  parts[2] = pool.allocate(0);
  CHECK(check_parts(parts) == MultipartCheck::empty_block);
}

TEST_CASE_METHOD(MisuseFails, "a message not sent gives every part back as it was given", "[multipart]") {
  mem::Pool pool = make_pool(4);
  const std::vector<std::size_t> sizes{0, 5000, 12, 0, 9000, 1};
  std::vector<mem::Ref> parts = make_parts(pool, sizes);
  std::vector<const mem::Block*> heads;
  std::vector<std::size_t> blocks;
  for (const mem::Ref& part : parts) {
    heads.push_back(part.head());
    blocks.push_back(part ? part.chain_length() : 0);
  }
  Frame frame = linked_message(pool, parts);
  const mem::Block* head = frame.data.head();
  unlink_parts(frame.data, parts);
  CHECK(frame.data.head() == head);
  CHECK(frame.data.total_size() == kFrameHeaderSize + part_table_size(sizes.size()));
  check_parts_arrived(parts, sizes);
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    CHECK(parts[i].head() == heads[i]);
    CHECK((parts[i] ? parts[i].chain_length() : 0) == blocks[i]);
  }
}

}  // namespace daqx
