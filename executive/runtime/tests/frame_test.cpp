// The frame header: its exact bytes on the wire, and every outcome of validation on receive.
#include <catch2/catch.hpp>

#include <array>

#include "daqx/api/frame.hpp"

using namespace daqx;

namespace {

std::array<std::byte, kFrameHeaderSize> encoded(const FrameHeader& header) {
  std::array<std::byte, kFrameHeaderSize> bytes{};
  encode_header(header, bytes.data());
  return bytes;
}

}  // namespace

TEST_CASE("the header is 32 little-endian bytes laid out as docs/wire-format.md says", "[frame]") {
  FrameHeader h;
  h.flags = frame_flags::reply;
  h.total_length = 0x01020304;
  h.target = 0x0a0b0c0d;
  h.initiator = 0x11121314;
  h.function = 0x2122;
  h.transaction = 0x3132333435363738ULL;
  auto bytes = encoded(h);
  const unsigned char expected[kFrameHeaderSize] = {
      0x9c, 0xda, 0x01, 0x01,                          // magic, version, flags
      0x04, 0x03, 0x02, 0x01,                          // total length
      0x0d, 0x0c, 0x0b, 0x0a,                          // target
      0x14, 0x13, 0x12, 0x11,                          // initiator
      0x22, 0x21, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  // function, reserved
      0x38, 0x37, 0x36, 0x35, 0x34, 0x33, 0x32, 0x31}; // transaction
  for (std::size_t i = 0; i < kFrameHeaderSize; ++i) {
    INFO("byte " << i);
    CHECK(static_cast<unsigned char>(bytes[i]) == expected[i]);
  }
  FrameHeader back = decode_header(bytes.data());
  CHECK(back.flags == h.flags);
  CHECK(back.total_length == h.total_length);
  CHECK(back.target == h.target);
  CHECK(back.initiator == h.initiator);
  CHECK(back.function == h.function);
  CHECK(back.transaction == h.transaction);
}

TEST_CASE("validation on receive catches every malformed header", "[frame]") {
  FrameHeader h;
  h.total_length = 100;
  h.target = 1;
  auto good = encoded(h);
  CHECK(check_header(good.data(), 32, 100, 1000) == FrameCheck::ok);
  CHECK(check_header(good.data(), 32, 0, 1000) == FrameCheck::ok);  // length not known yet: fine
  CHECK(check_header(good.data(), 31, 0, 1000) == FrameCheck::too_short);
  CHECK(check_header(good.data(), 32, 99, 1000) == FrameCheck::bad_length);
  CHECK(check_header(good.data(), 32, 0, 99) == FrameCheck::too_long);

  auto bad_magic = good;
  bad_magic[0] = std::byte{0x00};
  CHECK(check_header(bad_magic.data(), 32, 0, 1000) == FrameCheck::bad_magic);
  auto bad_version = good;
  bad_version[frame_offset::version] = std::byte{2};
  CHECK(check_header(bad_version.data(), 32, 0, 1000) == FrameCheck::bad_version);
  FrameHeader short_total = h;
  short_total.total_length = 31;
  auto too_small = encoded(short_total);
  CHECK(check_header(too_small.data(), 32, 0, 1000) == FrameCheck::bad_length);
  FrameHeader huge = h;
  huge.total_length = 0xffffffffu;
  auto huge_bytes = encoded(huge);
  CHECK(check_header(huge_bytes.data(), 32, 0, kDefaultMaxFrameSize) == FrameCheck::too_long);
  CHECK(to_string(FrameCheck::bad_magic) == "bad magic (not a daqx frame)");
}
