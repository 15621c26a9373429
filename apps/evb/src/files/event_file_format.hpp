// The on-disk layout of the BU's event files, shared by their writer and their reader: magic numbers,
// versions, record sizes and file names. Format: docs/evb-files.md.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace daqx::evb {

// ---- the file format (docs/evb-files.md), little-endian ------------------------------------------------

inline constexpr char kEventFileMagic[8] = {'D', 'A', 'Q', 'X', 'E', 'V', 'B', '1'};
// 2 added the run number at offset 40 of the header; files of version 1 still read (run number 0).
inline constexpr std::uint32_t kEventFileVersion = 2;
inline constexpr std::uint32_t kOldestEventFileVersion = 1;
inline constexpr std::size_t kFileHeaderBytes = 64;
inline constexpr std::uint32_t kEventRecordMagic = 0x544E5645;    // "EVNT" in the file
inline constexpr std::uint32_t kTrailerRecordMagic = 0x524C5254;  // "TRLR" in the file
inline constexpr std::size_t kEventRecordHeaderBytes = 32;
inline constexpr std::size_t kFragmentEntryBytes = 16;
inline constexpr std::size_t kTrailerRecordBytes = 48;
inline constexpr std::size_t kFragmentAlignment = 8;  // each fragment's bytes are zero-padded to this

// The zero bytes that follow a fragment of `size` bytes in a record.
constexpr std::uint64_t padding_of(std::uint64_t size) noexcept {
  return (kFragmentAlignment - size % kFragmentAlignment) % kFragmentAlignment;
}

// "run000123_bu7_0004.daqx"
std::string event_file_name(std::uint32_t run, std::uint32_t builder, std::uint32_t sequence);

// Throws std::runtime_error "WHAT PATH: SYSTEM ERROR", the form of every event file error.
[[noreturn]] void throw_file_error(std::string_view what, const std::string& path, int error);

}  // namespace daqx::evb
