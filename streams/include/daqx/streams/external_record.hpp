// The records of a stream as the control port writes them to an external subscriber (content type
// application/x-daqx-stream, in the chunks of a chunked answer; docs/monitoring.md, "External subscribers"): each a
// 40-byte little-endian header and the event's bytes. A record of sequence 0 and no bytes is a keep-alive, written
// when nothing else was for a second.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>

namespace daqx::streams {

inline constexpr std::uint32_t kRecordMagic = 0x4D525453;  // "STRM" in little-endian bytes
inline constexpr std::uint16_t kRecordVersion = 1;
inline constexpr std::size_t kRecordHeaderBytes = 40;
inline constexpr std::uint32_t kMaxRecordBytes = 64u << 20;  // the largest frame a transport takes by default
inline constexpr const char* kRecordContentType = "application/x-daqx-stream";

struct RecordHeader {
  std::uint64_t sequence = 0;  // 0: a keep-alive (length 0)
  std::uint64_t key = 0;
  std::uint64_t dropped = 0;  // events the subscription's policy dropped before this one, in all
  std::uint32_t length = 0;   // the event's bytes that follow
};

// u32 magic, u16 version, u16 header bytes (40), u64 sequence, u64 key, u64 dropped, u32 length, u32 0.
void encode(const RecordHeader& header, std::byte* out) noexcept;
// The header at the start of `bytes` (at least kRecordHeaderBytes of them), or the reason it is not one.
struct ParsedRecordHeader {
  std::optional<RecordHeader> header;
  std::string error;
};
ParsedRecordHeader parse_record_header(std::span<const std::byte> bytes);

}  // namespace daqx::streams
