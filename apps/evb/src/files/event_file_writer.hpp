// The BU's file output: built events written, without a user-space copy (writev straight from the received
// blocks), into files rotated by size. Format: event_file_format.hpp, docs/evb-files.md. A FileWriter is used
// from one thread (the BU's output worker).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "files/event_file_format.hpp"

namespace daqx::evb {

struct FileOutputConfig {
  std::string directory;                     // created if missing
  std::uint64_t max_file_bytes = 1ull << 30;  // a file is closed and a new one opened once it reaches this
  double max_bytes_per_second = 0;           // 0: unlimited; else writing sleeps to stay below (slow storage)
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

}  // namespace daqx::evb
