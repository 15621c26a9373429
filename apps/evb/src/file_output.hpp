// The BU's file output: built events written, without a user-space copy (writev straight from the received
// blocks), into files rotated by size, and read back by `daqx-evb-dump` and the tests. Format:
// docs/evb-files.md. A FileWriter is used from one thread (the BU's output worker).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace daqx::evb {

struct FileOutputConfig {
  std::string directory;                     // created if missing
  std::uint64_t max_file_bytes = 1ull << 30;  // a file is closed and a new one opened once it reaches this
  double max_bytes_per_second = 0;           // 0: unlimited; else writing sleeps to stay below (slow storage)
};

// One event as the writer sees it: contributors' super-fragments, each in pieces.
struct EventRecordView {
  std::uint32_t run = 0;  // must be the writer's run: a file holds one run
  std::uint64_t event = 0;
  std::uint32_t flags = 0;  // evb::event_flags
  struct Fragment {
    std::uint32_t contributor = 0;
    std::size_t size = 0;
    std::span<const std::span<const std::byte>> pieces;
  };
  std::span<const Fragment> fragments;
};

struct FileOutputStats {
  std::uint64_t events = 0;
  std::uint64_t bytes = 0;          // written to files, headers included
  std::uint64_t files_closed = 0;
  std::string current_file;         // being written ("" when none is open)
};

class FileWriter {
 public:
  // Files are named run<RUN 6 digits>_bu<BU TID>_<SEQUENCE 4 digits>.daqx, written as NAME.open and renamed
  // when closed, so a reader never sees a file being written under its final name.
  // `run` is the event builder's run (the EvM's, in every record); `run_number` the operator's run the BU was
  // enabled in (ApplicationContext::run_number(), 0: none), written in each file's header.
  FileWriter(FileOutputConfig config, std::uint32_t run, std::uint32_t builder, std::uint64_t run_number = 0);
  ~FileWriter();  // closes the current file
  FileWriter(const FileWriter&) = delete;
  FileWriter& operator=(const FileWriter&) = delete;

  // Appends one event, opening or rotating files as needed. Throws std::runtime_error naming the file and
  // the system error on failure (disk full, permission): the BU fails with that reason.
  void write(const EventRecordView& event);
  // Closes the current file (trailer, rename); the next write opens a new one. Throws, as write does, when
  // that fails, and when the file was removed while being written (its events are then lost).
  void close();
  const FileOutputStats& stats() const noexcept { return stats_; }

 private:
  struct Impl;
  void open_next();
  void pace(std::uint64_t bytes);

  FileOutputConfig config_;
  std::uint32_t run_ = 0;
  std::uint32_t builder_ = 0;
  std::uint64_t run_number_ = 0;
  FileOutputStats stats_;
  std::unique_ptr<Impl> impl_;
};

// Whether event files can be written in `directory`: creates it if missing, then creates and removes a file
// there (permission bits alone say nothing: root ignores them, a read-only mount does not). Throws
// std::runtime_error naming the directory and the system error, so a BU refuses it at configure rather
// than failing at its first event.
void check_output_directory(const std::string& directory);

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

// "run000123_bu7_0004.daqx"
std::string event_file_name(std::uint32_t run, std::uint32_t builder, std::uint32_t sequence);

// ---- reading files back (daqx-evb-dump, tests) ---------------------------------------------------------

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

// What read_event_file does once the bytes are loaded: checks the structure of `file.data` (kept alive by
// `file.mapping`, if anything) and fills in the header fields, the records, the trailer and the problem.
void parse_event_file(EventFile& file);

}  // namespace daqx::evb
