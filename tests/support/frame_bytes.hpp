// The encoded header of a daqx frame for tests that put frames on the wire by hand (bad peers, raw sockets).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "daqx/api/frame.hpp"

namespace daqx::test {

// A valid header for a frame of `total` bytes (header included) to application `target`, function 0x20.
inline std::array<std::byte, kFrameHeaderSize> frame_header_bytes(std::uint32_t total, Tid target,
                                                                   Tid initiator) {
  FrameHeader h;
  h.total_length = total;
  h.target = target;
  h.initiator = initiator;
  h.function = 0x20;
  std::array<std::byte, kFrameHeaderSize> bytes{};
  encode_header(h, bytes.data());
  return bytes;
}

}  // namespace daqx::test
