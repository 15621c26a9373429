// The event builder's messages as a specification: layouts, round trips, and every payload a decoder refuses.
#include <catch2/catch.hpp>

#include <cstring>
#include <limits>
#include <optional>
#include <vector>

#include "daqx/evb/protocol.hpp"

using namespace daqx;
using namespace daqx::evb;

namespace {

std::uint64_t le64(const std::byte* at) { return detail::load_le<std::uint64_t>(at); }
std::uint32_t le32(const std::byte* at) { return detail::load_le<std::uint32_t>(at); }
std::uint16_t le16(const std::byte* at) { return detail::load_le<std::uint16_t>(at); }

Request sample_request() {
  Request r;
  r.run = 12;
  r.generation = 3;
  r.incarnation = 0x1122334455667788ull;
  r.priority = 200;
  r.state = output_state::throttled;
  r.total_slots = 64;
  r.free_slots = {5, 6, 7};
  r.discards = {{1000, 16, 2, 1, 0}, {0xFFFFFFFF00000001ull, 4, 9, 0, 3}};
  return r;
}

Allocate sample_allocate() {
  Allocate a;
  a.run = 7;
  a.assignments = {{101, 2, 3, 16, 1000}, {102, 5, 0, 1, 0x8000000000000000ull}};
  return a;
}

RuStatus sample_ru_status() {
  RuStatus s;
  s.run = 9;
  s.incarnation = 0xCAFEBABE12345678ull;
  s.fragments_sent = 123456789;
  s.bytes_sent = 0x0102030405060708ull;
  return s;
}

Control sample_control() {
  Control c;
  c.kind = ControlKind::run_failed;
  c.run = 4;
  c.generation = 8;
  c.subject = 77;
  c.text = "RU 12 lost its data link";
  return c;
}

template <typename Message>
std::vector<std::byte> encoded(const Message& m) {
  std::vector<std::byte> bytes(4096);
  const std::optional<std::size_t> used = encode(m, bytes.data(), bytes.size());
  REQUIRE(used.has_value());
  bytes.resize(*used);
  return bytes;
}

bool same(const Request& a, const Request& b) {
  if (a.run != b.run || a.generation != b.generation || a.incarnation != b.incarnation ||
      a.priority != b.priority || a.state != b.state || a.total_slots != b.total_slots ||
      a.free_slots != b.free_slots || a.discards.size() != b.discards.size())
    return false;
  for (std::size_t i = 0; i < a.discards.size(); ++i) {
    const Discard& x = a.discards[i];
    const Discard& y = b.discards[i];
    if (x.first_event != y.first_event || x.count != y.count || x.slot != y.slot || x.incomplete != y.incomplete ||
        x.corrupt != y.corrupt)
      return false;
  }
  return true;
}

bool same(const Allocate& a, const Allocate& b) {
  if (a.run != b.run || a.assignments.size() != b.assignments.size()) return false;
  for (std::size_t i = 0; i < a.assignments.size(); ++i) {
    const Assignment& x = a.assignments[i];
    const Assignment& y = b.assignments[i];
    if (x.bu != y.bu || x.generation != y.generation || x.slot != y.slot || x.count != y.count ||
        x.first_event != y.first_event)
      return false;
  }
  return true;
}

}  // namespace

// ---- Request -------------------------------------------------------------------------------------------

TEST_CASE("a request decodes to the request that was encoded", "[protocol]") {
  const Request r = sample_request();
  const auto bytes = encoded(r);
  CHECK(bytes.size() == request_bytes(r));
  const auto back = decode_request(bytes.data(), bytes.size());
  REQUIRE(back.has_value());
  CHECK(same(*back, r));
}

TEST_CASE("a request with no free slots and no discards is a 32-byte heartbeat that round-trips", "[protocol]") {
  Request r;
  r.run = 1;
  r.incarnation = 42;
  r.state = output_state::blocked;
  CHECK(request_bytes(r) == 32);
  const auto bytes = encoded(r);
  const auto back = decode_request(bytes.data(), bytes.size());
  REQUIRE(back.has_value());
  CHECK(same(*back, r));
}

TEST_CASE("a request's fields lie at the documented offsets, each count just before its list", "[protocol]") {
  const Request r = sample_request();
  const auto bytes = encoded(r);
  REQUIRE(bytes.size() == 32 + 3 * 4 + 2 * 24);
  CHECK(le32(&bytes[0]) == 12);
  CHECK(le32(&bytes[4]) == 3);
  CHECK(le64(&bytes[8]) == 0x1122334455667788ull);
  CHECK(le16(&bytes[16]) == 200);
  CHECK(le16(&bytes[18]) == output_state::throttled);
  CHECK(le32(&bytes[20]) == 64);
  CHECK(le32(&bytes[24]) == 3);
  CHECK(le32(&bytes[28]) == 5);
  CHECK(le32(&bytes[36]) == 7);
  CHECK(le32(&bytes[40]) == 2);
  CHECK(le64(&bytes[44]) == 1000);
  CHECK(le32(&bytes[52]) == 16);
  CHECK(le32(&bytes[56]) == 2);
  CHECK(le32(&bytes[60]) == 1);
  CHECK(le32(&bytes[64]) == 0);
  CHECK(le64(&bytes[68]) == 0xFFFFFFFF00000001ull);
}

TEST_CASE("a request is encoded into exactly its size and refused by one byte less", "[protocol]") {
  const Request r = sample_request();
  std::vector<std::byte> out(request_bytes(r));
  CHECK(encode(r, out.data(), out.size()) == std::optional<std::size_t>(out.size()));
  CHECK_FALSE(encode(r, out.data(), out.size() - 1).has_value());
  CHECK_FALSE(encode(r, out.data(), 0).has_value());
}

TEST_CASE("a request cut short anywhere is refused", "[protocol]") {
  const auto bytes = encoded(sample_request());
  for (std::size_t size = 0; size < bytes.size(); ++size) {
    INFO("size " << size);
    CHECK_FALSE(decode_request(bytes.data(), size).has_value());
  }
}

TEST_CASE("a request with a byte after its last discard is refused", "[protocol]") {
  auto bytes = encoded(sample_request());
  bytes.push_back(std::byte{0});
  CHECK_FALSE(decode_request(bytes.data(), bytes.size()).has_value());
}

TEST_CASE("a request whose slot count does not match its bytes is refused", "[protocol]") {
  const auto good = encoded(sample_request());
  for (std::uint32_t count : {0u, 2u, 4u, 100u}) {
    auto bytes = good;
    detail::store_le<std::uint32_t>(&bytes[24], count);
    INFO("slot count " << count);
    CHECK_FALSE(decode_request(bytes.data(), bytes.size()).has_value());
  }
}

TEST_CASE("a request whose discard count does not match its bytes is refused", "[protocol]") {
  const auto good = encoded(sample_request());
  for (std::uint32_t count : {0u, 1u, 3u}) {
    auto bytes = good;
    detail::store_le<std::uint32_t>(&bytes[40], count);
    INFO("discard count " << count);
    CHECK_FALSE(decode_request(bytes.data(), bytes.size()).has_value());
  }
}

TEST_CASE("a request announcing billions of slots or discards is refused without allocating them", "[protocol]") {
  const auto good = encoded(sample_request());
  auto slots = good;
  detail::store_le<std::uint32_t>(&slots[24], std::numeric_limits<std::uint32_t>::max());
  CHECK_FALSE(decode_request(slots.data(), slots.size()).has_value());
  auto discards = good;
  detail::store_le<std::uint32_t>(&discards[40], std::numeric_limits<std::uint32_t>::max());
  CHECK_FALSE(decode_request(discards.data(), discards.size()).has_value());
}

// ---- Allocate ------------------------------------------------------------------------------------------

TEST_CASE("an allocate decodes to the assignments that were encoded, in order", "[protocol]") {
  const Allocate a = sample_allocate();
  const auto bytes = encoded(a);
  CHECK(bytes.size() == 8 + 2 * kAssignmentBytes);
  CHECK(le32(&bytes[0]) == 7);
  CHECK(le32(&bytes[4]) == 2);
  CHECK(le32(&bytes[8]) == 101);
  CHECK(le32(&bytes[12]) == 2);
  CHECK(le32(&bytes[16]) == 3);
  CHECK(le32(&bytes[20]) == 16);
  CHECK(le64(&bytes[24]) == 1000);
  const auto back = decode_allocate(bytes.data(), bytes.size());
  REQUIRE(back.has_value());
  CHECK(same(*back, a));
}

TEST_CASE("an allocate without assignments round-trips", "[protocol]") {
  Allocate a;
  a.run = 3;
  const auto bytes = encoded(a);
  CHECK(bytes.size() == 8);
  const auto back = decode_allocate(bytes.data(), bytes.size());
  REQUIRE(back.has_value());
  CHECK(same(*back, a));
}

TEST_CASE("as many assignments as assignments_that_fit says fit in that room, and one more does not", "[protocol]") {
  CHECK(assignments_that_fit(0) == 0);
  CHECK(assignments_that_fit(7) == 0);
  CHECK(assignments_that_fit(8) == 0);
  CHECK(assignments_that_fit(8 + kAssignmentBytes - 1) == 0);
  CHECK(assignments_that_fit(8 + kAssignmentBytes) == 1);
  for (std::size_t room : {std::size_t{8}, std::size_t{100}, std::size_t{1000}, std::size_t{65536 - 32}}) {
    INFO("room " << room);
    const std::size_t fit = assignments_that_fit(room);
    Allocate a;
    a.assignments.assign(fit, Assignment{1, 1, 1, 1, 1});
    std::vector<std::byte> out(room);
    const auto used = encode(a, out.data(), out.size());
    REQUIRE(used.has_value());
    CHECK(*used <= room);
    a.assignments.push_back(Assignment{});
    CHECK_FALSE(encode(a, out.data(), out.size()).has_value());
  }
}

TEST_CASE("an allocate cut short anywhere, or with a byte more, is refused", "[protocol]") {
  auto bytes = encoded(sample_allocate());
  for (std::size_t size = 0; size < bytes.size(); ++size) {
    INFO("size " << size);
    CHECK_FALSE(decode_allocate(bytes.data(), size).has_value());
  }
  bytes.push_back(std::byte{0});
  CHECK_FALSE(decode_allocate(bytes.data(), bytes.size()).has_value());
}

TEST_CASE("an allocate whose count does not match its bytes, or is absurd, is refused", "[protocol]") {
  const auto good = encoded(sample_allocate());
  for (std::uint32_t count : {0u, 1u, 3u, std::numeric_limits<std::uint32_t>::max()}) {
    auto bytes = good;
    detail::store_le<std::uint32_t>(&bytes[4], count);
    INFO("count " << count);
    CHECK_FALSE(decode_allocate(bytes.data(), bytes.size()).has_value());
  }
}

// ---- RU status -----------------------------------------------------------------------------------------

TEST_CASE("an RU status is 32 bytes with 8-aligned counters and round-trips", "[protocol]") {
  const RuStatus s = sample_ru_status();
  const auto bytes = encoded(s);
  REQUIRE(bytes.size() == 32);
  CHECK(le32(&bytes[0]) == 9);
  CHECK(le32(&bytes[4]) == 0);
  CHECK(le64(&bytes[8]) == s.incarnation);
  CHECK(le64(&bytes[16]) == s.fragments_sent);
  CHECK(le64(&bytes[24]) == s.bytes_sent);
  const auto back = decode_ru_status(bytes.data(), bytes.size());
  REQUIRE(back.has_value());
  CHECK(back->run == s.run);
  CHECK(back->incarnation == s.incarnation);
  CHECK(back->fragments_sent == s.fragments_sent);
  CHECK(back->bytes_sent == s.bytes_sent);
}

TEST_CASE("an RU status does not fit in 31 bytes", "[protocol]") {
  std::vector<std::byte> out(31);
  CHECK_FALSE(encode(sample_ru_status(), out.data(), out.size()).has_value());
}

TEST_CASE("an RU status cut short anywhere, or with a byte more, is refused", "[protocol]") {
  auto bytes = encoded(sample_ru_status());
  for (std::size_t size = 0; size < bytes.size(); ++size) {
    INFO("size " << size);
    CHECK_FALSE(decode_ru_status(bytes.data(), size).has_value());
  }
  bytes.push_back(std::byte{0});
  CHECK_FALSE(decode_ru_status(bytes.data(), bytes.size()).has_value());
}

// ---- Control -------------------------------------------------------------------------------------------

TEST_CASE("a control of every kind round-trips with its text", "[protocol]") {
  for (ControlKind kind : {ControlKind::heartbeat, ControlKind::reset, ControlKind::bu_down, ControlKind::ru_down,
                           ControlKind::end_of_run, ControlKind::run_failed}) {
    Control c = sample_control();
    c.kind = kind;
    INFO(to_string(kind));
    const auto bytes = encoded(c);
    CHECK(bytes.size() == control_bytes(c));
    const auto back = decode_control(bytes.data(), bytes.size());
    REQUIRE(back.has_value());
    CHECK(back->kind == kind);
    CHECK(back->run == c.run);
    CHECK(back->generation == c.generation);
    CHECK(back->subject == c.subject);
    CHECK(back->text == c.text);
  }
}

TEST_CASE("a control's fields lie at the documented offsets, the text length just before the text", "[protocol]") {
  const Control c = sample_control();
  const auto bytes = encoded(c);
  REQUIRE(bytes.size() == 20 + c.text.size());
  CHECK(le16(&bytes[0]) == 6);
  CHECK(le16(&bytes[2]) == 0);
  CHECK(le32(&bytes[4]) == 4);
  CHECK(le32(&bytes[8]) == 8);
  CHECK(le32(&bytes[12]) == 77);
  CHECK(le32(&bytes[16]) == c.text.size());
  CHECK(std::memcmp(&bytes[20], c.text.data(), c.text.size()) == 0);
}

TEST_CASE("a control without text is 20 bytes and round-trips", "[protocol]") {
  Control c;
  c.kind = ControlKind::heartbeat;
  c.run = 5;
  CHECK(control_bytes(c) == 20);
  const auto bytes = encoded(c);
  const auto back = decode_control(bytes.data(), bytes.size());
  REQUIRE(back.has_value());
  CHECK(back->text.empty());
  CHECK(back->run == 5);
}

TEST_CASE("a control is encoded into exactly its size and refused by one byte less", "[protocol]") {
  const Control c = sample_control();
  std::vector<std::byte> out(control_bytes(c));
  CHECK(encode(c, out.data(), out.size()) == std::optional<std::size_t>(out.size()));
  CHECK_FALSE(encode(c, out.data(), out.size() - 1).has_value());
}

TEST_CASE("a control of an unknown kind is neither encoded nor decoded", "[protocol]") {
  Control c = sample_control();
  c.kind = static_cast<ControlKind>(0);
  std::vector<std::byte> out(256);
  CHECK_FALSE(encode(c, out.data(), out.size()).has_value());
  const auto good = encoded(sample_control());
  for (std::uint16_t kind : {std::uint16_t{0}, std::uint16_t{7}, std::uint16_t{0xFFFF}}) {
    auto bytes = good;
    detail::store_le<std::uint16_t>(&bytes[0], kind);
    INFO("kind " << kind);
    CHECK_FALSE(decode_control(bytes.data(), bytes.size()).has_value());
  }
}

TEST_CASE("a control cut short anywhere, or with a byte more, is refused", "[protocol]") {
  auto bytes = encoded(sample_control());
  for (std::size_t size = 0; size < bytes.size(); ++size) {
    INFO("size " << size);
    CHECK_FALSE(decode_control(bytes.data(), size).has_value());
  }
  bytes.push_back(std::byte{'!'});
  CHECK_FALSE(decode_control(bytes.data(), bytes.size()).has_value());
}

TEST_CASE("a control whose text length does not match its bytes, or is absurd, is refused", "[protocol]") {
  const auto good = encoded(sample_control());
  const auto text_size = static_cast<std::uint32_t>(sample_control().text.size());
  for (std::uint32_t length : {0u, text_size - 1, text_size + 1, std::numeric_limits<std::uint32_t>::max()}) {
    auto bytes = good;
    detail::store_le<std::uint32_t>(&bytes[16], length);
    INFO("text length " << length);
    CHECK_FALSE(decode_control(bytes.data(), bytes.size()).has_value());
  }
}

TEST_CASE("every control kind has its own name and an unknown one is called unknown", "[protocol]") {
  CHECK(to_string(ControlKind::heartbeat) == "heartbeat");
  CHECK(to_string(ControlKind::reset) == "reset");
  CHECK(to_string(ControlKind::bu_down) == "bu_down");
  CHECK(to_string(ControlKind::ru_down) == "ru_down");
  CHECK(to_string(ControlKind::end_of_run) == "end_of_run");
  CHECK(to_string(ControlKind::run_failed) == "run_failed");
  CHECK(to_string(static_cast<ControlKind>(99)) == "unknown");
}

// ---- Fragment blocks -----------------------------------------------------------------------------------

TEST_CASE("a block header is kBlockHeaderBytes at the documented offsets and round-trips", "[protocol]") {
  BlockHeader h;
  h.run = 1;
  h.generation = 2;
  h.slot = 3;
  h.batch_count = 4;
  h.batch_first_event = 0x0102030405060708ull;
  h.piece_count = 6;
  h.flags = block_flags::last_of_batch;
  std::vector<std::byte> bytes(kBlockHeaderBytes);
  ByteWriter w(bytes.data(), bytes.size());
  encode(h, w);
  CHECK_FALSE(w.overflow());
  CHECK(w.used() == kBlockHeaderBytes);
  CHECK(le32(&bytes[0]) == 1);
  CHECK(le32(&bytes[4]) == 2);
  CHECK(le32(&bytes[8]) == 3);
  CHECK(le32(&bytes[12]) == 4);
  CHECK(le64(&bytes[16]) == h.batch_first_event);
  CHECK(le32(&bytes[24]) == 6);
  CHECK(le32(&bytes[28]) == block_flags::last_of_batch);
  ByteReader r(bytes.data(), bytes.size());
  const BlockHeader back = decode_block_header(r);
  CHECK(r.ok());
  CHECK(r.remaining() == 0);
  CHECK(back.run == 1);
  CHECK(back.generation == 2);
  CHECK(back.slot == 3);
  CHECK(back.batch_count == 4);
  CHECK(back.batch_first_event == h.batch_first_event);
  CHECK(back.piece_count == 6);
  CHECK(back.flags == block_flags::last_of_batch);
}

TEST_CASE("a piece header is kPieceHeaderBytes at the documented offsets and round-trips", "[protocol]") {
  PieceHeader h;
  h.event = 0xA1A2A3A4A5A6A7A8ull;
  h.superfragment_size = 70000;
  h.offset = 65000;
  h.size = 5000;
  std::vector<std::byte> bytes(kPieceHeaderBytes);
  ByteWriter w(bytes.data(), bytes.size());
  encode(h, w);
  CHECK_FALSE(w.overflow());
  CHECK(w.used() == kPieceHeaderBytes);
  CHECK(le64(&bytes[0]) == h.event);
  CHECK(le32(&bytes[8]) == 70000);
  CHECK(le32(&bytes[12]) == 65000);
  CHECK(le32(&bytes[16]) == 5000);
  CHECK(le32(&bytes[20]) == 0);
  ByteReader r(bytes.data(), bytes.size());
  const PieceHeader back = decode_piece_header(r);
  CHECK(r.ok());
  CHECK(back.event == h.event);
  CHECK(back.superfragment_size == 70000);
  CHECK(back.offset == 65000);
  CHECK(back.size == 5000);
  CHECK(back.reserved == 0);
}

TEST_CASE("a block or piece header in too little room sets overflow, and read from too few bytes, truncated",
          "[protocol]") {
  std::vector<std::byte> bytes(kBlockHeaderBytes - 1);
  ByteWriter block_writer(bytes.data(), bytes.size());
  encode(BlockHeader{}, block_writer);
  CHECK(block_writer.overflow());
  ByteWriter piece_writer(bytes.data(), kPieceHeaderBytes - 1);
  encode(PieceHeader{}, piece_writer);
  CHECK(piece_writer.overflow());
  ByteReader block_reader(bytes.data(), bytes.size());
  decode_block_header(block_reader);
  CHECK_FALSE(block_reader.ok());
  ByteReader piece_reader(bytes.data(), kPieceHeaderBytes - 1);
  decode_piece_header(piece_reader);
  CHECK_FALSE(piece_reader.ok());
}
