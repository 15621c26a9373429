// The on-disk layout of the BU's event files, shared by their writer, their reader and the BU's stream of events
// (whose event bytes are an event record): magic numbers, versions, record sizes, the record's header and
// fragment table, and file names. Format: docs/evb-files.md.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
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

// Little-endian stores and loads, byte by byte, so that a file reads the same on any host.
inline void put32(std::byte* at, std::uint32_t value) noexcept {
  for (int i = 0; i < 4; ++i) at[i] = static_cast<std::byte>(value >> (8 * i));
}
inline void put64(std::byte* at, std::uint64_t value) noexcept {
  for (int i = 0; i < 8; ++i) at[i] = static_cast<std::byte>(value >> (8 * i));
}

// One event as a record describes it: contributors' super-fragments, each in pieces (the writer's and the
// stream's view of the blocks the BU received; nothing is copied into it).
struct EventRecordView {
  std::uint32_t run = 0;  // the file writer's run: a file holds one run
  std::uint64_t event = 0;
  std::uint32_t flags = 0;  // evb::event_flags
  struct Fragment {
    std::uint32_t contributor = 0;
    std::size_t size = 0;
    std::span<const std::span<const std::byte>> pieces;
  };
  std::span<const Fragment> fragments;
};

// The record header and fragment table of a record of `fragments` fragments.
constexpr std::size_t event_record_head_bytes(std::size_t fragments) noexcept {
  return kEventRecordHeaderBytes + kFragmentEntryBytes * fragments;
}
// The bytes of the whole record of `event`: head, fragments and their padding. Throws std::runtime_error naming
// the event when a fragment's pieces do not add up to its size, or it has more than 2^32 fragments, so that a bad
// view never leaves half a record behind.
std::uint64_t event_record_bytes(const EventRecordView& event);
// Writes the record header and the fragment table (event_record_head_bytes(fragments) bytes) at `head`;
// record_bytes: event_record_bytes(event). The fragments' bytes follow, each padded with padding_of(size) zeros.
void encode_event_record_head(const EventRecordView& event, std::uint64_t record_bytes, std::byte* head) noexcept;

// "run000123_bu7_0004.daqx"
std::string event_file_name(std::uint32_t run, std::uint32_t builder, std::uint32_t sequence);

// Throws std::runtime_error "WHAT PATH: SYSTEM ERROR", the form of every event file error.
[[noreturn]] void throw_file_error(std::string_view what, const std::string& path, int error);

}  // namespace daqx::evb
