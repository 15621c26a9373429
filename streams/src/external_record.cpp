#include "daqx/streams/external_record.hpp"

#include "daqx/api/frame.hpp"

namespace daqx::streams {

using detail::load_le;
using detail::store_le;

void encode(const RecordHeader& header, std::byte* out) noexcept {
  store_le<std::uint32_t>(out + 0, kRecordMagic);
  store_le<std::uint16_t>(out + 4, kRecordVersion);
  store_le<std::uint16_t>(out + 6, static_cast<std::uint16_t>(kRecordHeaderBytes));
  store_le<std::uint64_t>(out + 8, header.sequence);
  store_le<std::uint64_t>(out + 16, header.key);
  store_le<std::uint64_t>(out + 24, header.dropped);
  store_le<std::uint32_t>(out + 32, header.length);
  store_le<std::uint32_t>(out + 36, 0);
}

ParsedRecordHeader parse_record_header(std::span<const std::byte> bytes) {
  ParsedRecordHeader parsed;
  if (bytes.size() < kRecordHeaderBytes) {
    parsed.error = "a stream record header of " + std::to_string(bytes.size()) + " bytes: it has " +
                   std::to_string(kRecordHeaderBytes);
    return parsed;
  }
  const std::byte* in = bytes.data();
  if (load_le<std::uint32_t>(in) != kRecordMagic) {
    parsed.error = "not a stream record: no STRM magic";
  } else if (load_le<std::uint16_t>(in + 4) != kRecordVersion) {
    parsed.error = "stream record version " + std::to_string(load_le<std::uint16_t>(in + 4)) + ", this reader has " +
                   std::to_string(kRecordVersion);
  } else if (load_le<std::uint16_t>(in + 6) != kRecordHeaderBytes || load_le<std::uint32_t>(in + 36) != 0) {
    parsed.error = "a stream record header that is not 40 bytes with its reserved word 0";
  } else {
    RecordHeader header;
    header.sequence = load_le<std::uint64_t>(in + 8);
    header.key = load_le<std::uint64_t>(in + 16);
    header.dropped = load_le<std::uint64_t>(in + 24);
    header.length = load_le<std::uint32_t>(in + 32);
    if (header.length > kMaxRecordBytes) {
      parsed.error = "a stream record of " + std::to_string(header.length) + " bytes: more than the most, " +
                     std::to_string(kMaxRecordBytes);
    } else if (header.sequence == 0 && header.length != 0) {
      parsed.error = "a keep-alive record (sequence 0) with bytes";
    } else {
      parsed.header = header;
    }
  }
  return parsed;
}

}  // namespace daqx::streams
