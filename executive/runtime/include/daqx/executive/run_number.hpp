// Run numbers: the range the control API accepts, and the run file that hands out the next one.
//
// A run file holds the last run number allocated, as decimal digits and a newline ("1234\n"), nothing else.
// Whoever owns the runs of a partition (daqx-launch; daqxctl enable --run-file) allocates from it:
//
//   daqx::RunNumberFile runs("/var/lib/daqx/runs");   // nothing is touched yet
//   std::uint64_t run = runs.next();                  // 1 for a new file, then 2, 3, ...
//   // POST /api/transition {"command":"enable","run":<run>} to every context
//
// next() is safe between threads and processes on one machine (flock on the file, which stays in place) and
// durable (the number is on disk, fsync'd, before next() returns), so two callers never get the same number
// and a crash never hands one out twice. The file is created, holding "0\n", the first time it is needed; it
// never exists empty, so an empty or unreadable file is damage and an error, never silently run 1 again.
// Errors are RunNumberError, naming the file and the reason: a missing directory, no permission, a full disk,
// damaged contents, the last number already at kMaxRunNumber.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

namespace daqx {

// The largest run number: every integer up to it is exact in a double, so it survives JSON readers and
// Prometheus (daqx_run_number) unchanged.
inline constexpr std::uint64_t kMaxRunNumber = (std::uint64_t{1} << 53) - 1;

class RunNumberError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class RunNumberFile {
 public:
  explicit RunNumberFile(std::string path) : path_(std::move(path)) {}

  // Allocates the next run number: the last one plus 1, written back before it is returned.
  std::uint64_t next();
  // The last run number allocated; 0 when the file does not exist yet. Reads only.
  std::uint64_t current() const;

  const std::string& path() const noexcept { return path_; }

 private:
  std::string path_;
};

}  // namespace daqx
