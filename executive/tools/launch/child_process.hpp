// A local child process as the launcher holds it: its standard input is a pipe the launcher keeps open for the
// child's whole life, its output goes to a log file, and it runs in a process group of its own.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace daqx::launch {

class ChildProcess {
 public:
  // Starts argv[0] (looked up in PATH) with `environment` added to the launcher's and the variables named in
  // `unset` removed, standard output and error appended to log_fd. Throws std::runtime_error when the pipe or
  // fork fails; an exec failure shows as exit code 127 with the reason in the log.
  ChildProcess(const std::vector<std::string>& argv, const std::vector<std::pair<std::string, std::string>>& environment,
               int log_fd, const std::vector<std::string>& unset = {});
  ~ChildProcess();  // kills a child that still runs (SIGKILL) and reaps it: nothing is left behind
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  pid_t pid() const noexcept { return pid_; }
  // The wait status once the child has ended (reaped here), without blocking.
  std::optional<int> poll();
  // Ends the child's standard input: the executive (--stop-on-stdin-eof) or the ssh session carrying it stops.
  void close_input();
  void signal(int number) const;

 private:
  pid_t pid_ = -1;
  int input_fd_ = -1;
  std::optional<int> status_;
};

// "exit code 1", "killed by Killed", ...: a wait status in words.
std::string describe_wait_status(int status);
bool exited_cleanly(int status);

}  // namespace daqx::launch
