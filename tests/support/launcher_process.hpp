// daqx-launch run in the background by a test, as a user runs it: its output kept in a file, its end awaited
// with a bound, and the counters of its end-of-run summary read back.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace daqx::test {

class LauncherProcess {
 public:
  // Starts daqx-launch (of the build tree) with `arguments`, `environment` ("NAME=VALUE") added to the test's,
  // under `wrapper` when one is given (e.g. {"salloc", "-N2", "--"}: inside a Slurm allocation).
  explicit LauncherProcess(const std::vector<std::string>& arguments, const std::vector<std::string>& environment = {},
                           const std::vector<std::string>& wrapper = {});
  ~LauncherProcess();  // kills a launcher still running (SIGKILL), so a failed test leaves no run behind
  LauncherProcess(const LauncherProcess&) = delete;
  LauncherProcess& operator=(const LauncherProcess&) = delete;

  // Waits up to `limit` for the launcher to end; its exit code, or nullopt when it is still running (or was
  // killed by a signal).
  std::optional<int> wait(std::chrono::milliseconds limit);
  bool running();
  void signal(int number) const;
  // Ends the run now, in order, as an operator's Ctrl-C would: SIGTERM to daqx-launch itself (under a wrapper,
  // the daqx-launch the wrapper started, not the wrapper). A test whose assertions hold before its
  // --run bound ends the run here instead of waiting for time to pass.
  void end_run() const;
  std::string output() const;  // everything it printed so far
  // The dashboard's address as the launcher printed it (http://127.0.0.1:PORT); empty when it did not within
  // `limit` (or ended first).
  std::string dashboard_url(std::chrono::milliseconds limit);
  pid_t pid() const noexcept { return pid_; }  // of daqx-launch, or of the wrapper when there is one

  // A counter of an application at the end of the run, from the file the launcher's summary names
  // ("evb/evm/0 events_assigned 123" per line, zeros included): its value, or -1 when there is none.
  double summary_counter(const std::string& application, const std::string& metric) const;

 private:
  pid_t pid_ = -1;
  std::string output_path_;
  std::optional<int> status_;
};

// The pid in the last "ready (pid N)" line of a context's log the launcher keeps (the executive that runs now), or
// -1.
pid_t executive_pid_in_log(const std::string& log_path);

}  // namespace daqx::test
