// Frame header validation, done before any handler sees a frame.
#include "daqx/api/frame.hpp"

namespace daqx {

std::string_view to_string(FrameCheck check) noexcept {
  switch (check) {
    case FrameCheck::ok: return "ok";
    case FrameCheck::too_short: return "shorter than a frame header";
    case FrameCheck::bad_magic: return "bad magic (not a daqx frame)";
    case FrameCheck::bad_version: return "unknown frame version";
    case FrameCheck::bad_length: return "total length does not match the bytes received";
    case FrameCheck::too_long: return "total length above the maximum frame size";
  }
  return "?";
}

FrameCheck check_header(const std::byte* in, std::size_t bytes_available, std::size_t bytes_present,
                        std::uint32_t max_frame_size) noexcept {
  if (bytes_available < kFrameHeaderSize) return FrameCheck::too_short;
  if (detail::load_le<std::uint16_t>(in + frame_offset::magic) != kFrameMagic) return FrameCheck::bad_magic;
  if (static_cast<std::uint8_t>(in[frame_offset::version]) != kFrameVersion) return FrameCheck::bad_version;
  std::uint32_t total = detail::load_le<std::uint32_t>(in + frame_offset::total_length);
  if (total < kFrameHeaderSize) return FrameCheck::bad_length;
  if (total > max_frame_size) return FrameCheck::too_long;
  if (bytes_present != 0 && total != bytes_present) return FrameCheck::bad_length;
  return FrameCheck::ok;
}

}  // namespace daqx
