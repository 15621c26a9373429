// Reading the BU's event files back (daqx-evb-dump, the tests, the fuzzer): every record up to the first
// structural problem, named with its offset. Format: event_file_format.hpp, docs/evb-files.md.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "files/event_file_format.hpp"

namespace daqx::evb {

struct EventFileFragment {
  std::uint32_t contributor = 0;
  std::span<const std::byte> bytes;  // into EventFile::data, padding excluded
};

struct EventFileRecord {
  std::uint64_t offset = 0;  // of the record in the file
  std::uint64_t bytes = 0;   // record bytes: header, fragment table and padded fragments
  std::uint32_t flags = 0;
  std::uint64_t event = 0;
  std::uint32_t run = 0;
  std::vector<EventFileFragment> fragments;
};

struct EventFileTrailer {
  std::uint64_t events = 0;
  std::uint64_t file_bytes = 0;  // the whole file, trailer included
  std::uint64_t first_event = 0;
  std::uint64_t last_event = 0;
  std::uint64_t closed_ns = 0;  // since the epoch
};

// A file as read: every record up to the first structural problem. Copies share the loaded bytes.
struct EventFile {
  std::string path;
  std::shared_ptr<const void> mapping;  // keeps data alive
  std::span<const std::byte> data;      // the whole file
  std::uint32_t version = 0;
  std::uint32_t run = 0;
  std::uint32_t builder = 0;
  std::uint32_t sequence = 0;
  std::uint64_t created_ns = 0;  // since the epoch
  std::uint64_t run_number = 0;  // the operator's run (version 2 on); 0: none given, or a version 1 file
  std::vector<EventFileRecord> records;
  bool has_trailer = false;  // false: the file was not closed cleanly (or is still being written)
  EventFileTrailer trailer;
  std::string problem;  // the first structural problem in words, with its offset; "" when none

  bool ok() const noexcept { return problem.empty() && has_trailer; }
};

// Reads and checks the structure of one file (header, every record's magic and sizes, padding, the trailer
// against what was read). Throws std::runtime_error only when the file cannot be opened or read; problems
// with its content are reported in EventFile::problem.
EventFile read_event_file(const std::string& path);

// Checks the structure of the one event record at the start of `bytes` (magic, sizes, fragment table, padding)
// and fills `record`, its fragments pointing into `bytes`: "" or the first problem in words, naming `offset` (the
// record's in its file; 0 for a record on its own, as the BU's stream sends them). Bytes past the record are not
// looked at.
std::string parse_event_record(std::span<const std::byte> bytes, std::uint64_t offset, EventFileRecord& record);

// What read_event_file does once the bytes are loaded: checks the structure of `file.data` (kept alive by
// `file.mapping`, if anything) and fills in the header fields, the records, the trailer and the problem.
void parse_event_file(EventFile& file);

}  // namespace daqx::evb
