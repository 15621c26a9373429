// The frame: a fixed 32-byte little-endian header at the front of a Ref chain; payload follows.
// The byte layout is documented in docs/wire-format.md and must not change without a version bump.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "daqx/mempool/ref.hpp"

namespace daqx {

using Tid = std::uint32_t;  // application id, unique in a partition
inline constexpr Tid kNoTid = 0;

inline constexpr std::uint16_t kFrameMagic = 0xDA9C;
inline constexpr std::uint8_t kFrameVersion = 1;
inline constexpr std::size_t kFrameHeaderSize = 32;
// The largest frame any transport accepts unless configured otherwise (header + payload).
inline constexpr std::uint32_t kDefaultMaxFrameSize = 64u << 20;

namespace frame_flags {
inline constexpr std::uint8_t reply = 0x01;     // an answer to a frame with the same transaction word
inline constexpr std::uint8_t send_now = 0x02;  // transports send it at once, whatever the endpoint's mode
inline constexpr std::uint8_t coalesce = 0x04;  // transports may hold it to send with others (throughput)
inline constexpr std::uint8_t multipart = 0x08;  // the payload is a part table and parts (multipart.hpp)
}

// Decoded header. Encoding and decoding go through explicit little-endian accessors, never a cast.
struct FrameHeader {
  std::uint8_t version = kFrameVersion;
  std::uint8_t flags = 0;
  std::uint32_t total_length = 0;  // header + payload, bytes
  Tid target = kNoTid;
  Tid initiator = kNoTid;
  std::uint16_t function = 0;      // which handler of the target
  std::uint64_t transaction = 0;   // free for the application: sequence number, context pointer, ...
};

namespace detail {
template <typename T>
constexpr T byteswap(T value) noexcept {  // std::byteswap is C++23
  if constexpr (sizeof(T) == 2) return static_cast<T>(__builtin_bswap16(value));
  if constexpr (sizeof(T) == 4) return static_cast<T>(__builtin_bswap32(value));
  if constexpr (sizeof(T) == 8) return static_cast<T>(__builtin_bswap64(value));
  return value;
}
template <typename T>
inline void store_le(std::byte* at, T value) noexcept {
  if constexpr (std::endian::native == std::endian::big) value = byteswap(value);
  std::memcpy(at, &value, sizeof value);
}
template <typename T>
inline T load_le(const std::byte* at) noexcept {
  T value;
  std::memcpy(&value, at, sizeof value);
  if constexpr (std::endian::native == std::endian::big) value = byteswap(value);
  return value;
}
}  // namespace detail

// Byte offsets of the header fields (docs/wire-format.md).
namespace frame_offset {
inline constexpr std::size_t magic = 0;         // u16
inline constexpr std::size_t version = 2;       // u8
inline constexpr std::size_t flags = 3;         // u8
inline constexpr std::size_t total_length = 4;  // u32
inline constexpr std::size_t target = 8;        // u32
inline constexpr std::size_t initiator = 12;    // u32
inline constexpr std::size_t function = 16;     // u16
inline constexpr std::size_t reserved = 18;     // u16 + u32, zero
inline constexpr std::size_t transaction = 24;  // u64
}  // namespace frame_offset

inline void encode_header(const FrameHeader& h, std::byte* out) noexcept {
  using namespace detail;
  store_le<std::uint16_t>(out + frame_offset::magic, kFrameMagic);
  out[frame_offset::version] = std::byte{h.version};
  out[frame_offset::flags] = std::byte{h.flags};
  store_le<std::uint32_t>(out + frame_offset::total_length, h.total_length);
  store_le<std::uint32_t>(out + frame_offset::target, h.target);
  store_le<std::uint32_t>(out + frame_offset::initiator, h.initiator);
  store_le<std::uint16_t>(out + frame_offset::function, h.function);
  store_le<std::uint16_t>(out + frame_offset::reserved, 0);
  store_le<std::uint32_t>(out + frame_offset::reserved + 2, 0);
  store_le<std::uint64_t>(out + frame_offset::transaction, h.transaction);
}

inline FrameHeader decode_header(const std::byte* in) noexcept {
  using namespace detail;
  FrameHeader h;
  h.version = static_cast<std::uint8_t>(in[frame_offset::version]);
  h.flags = static_cast<std::uint8_t>(in[frame_offset::flags]);
  h.total_length = load_le<std::uint32_t>(in + frame_offset::total_length);
  h.target = load_le<std::uint32_t>(in + frame_offset::target);
  h.initiator = load_le<std::uint32_t>(in + frame_offset::initiator);
  h.function = load_le<std::uint16_t>(in + frame_offset::function);
  h.transaction = load_le<std::uint64_t>(in + frame_offset::transaction);
  return h;
}

enum class FrameCheck { ok, too_short, bad_magic, bad_version, bad_length, too_long };
std::string_view to_string(FrameCheck check) noexcept;

// Checks what can be checked from the header alone against the bytes that arrived: magic, version,
// total length >= header and <= max_frame_size, and total length == bytes_present when that is known
// (0 = not yet known, e.g. a stream transport that has read only the header).
FrameCheck check_header(const std::byte* in, std::size_t bytes_available, std::size_t bytes_present,
                        std::uint32_t max_frame_size) noexcept;

// A received frame as handlers see it: the decoded header and the Ref chain (header block first; the
// header's bytes are the first kFrameHeaderSize bytes of the chain). The handler owns it: release it
// or forward it.
struct Frame {
  FrameHeader header;
  mem::Ref data;

  // The payload's first window: the head block past the header. Payload may continue in data's chain.
  std::byte* payload() const noexcept { return data.data() + kFrameHeaderSize; }
  std::size_t payload_size_in_head() const noexcept { return data.size() - kFrameHeaderSize; }
  std::size_t payload_size() const noexcept { return header.total_length - kFrameHeaderSize; }
};

}  // namespace daqx
