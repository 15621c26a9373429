// Short helper commands the engines run and wait for (copying the partition over ssh, asking Slurm about its
// nodes, killing a remote executive): bounded in time, output captured for the message when they fail.
#pragma once

#include <chrono>
#include <string>
#include <vector>

namespace daqx::launch {

struct CommandResult {
  int exit_code = -1;   // -1: did not start, was killed, or ran past its limit
  std::string output;   // standard output and error, interleaved
  bool timed_out = false;
  bool ok() const noexcept { return exit_code == 0; }
  // "exit code 255: ssh: connect to host ... refused": the last kDescribedLines lines of the output.
  std::string describe() const;
  static constexpr int kDescribedLines = 5;
};

// Runs argv (argv[0] looked up in PATH) with `input` as its standard input, killed past `limit`.
CommandResult run_command(const std::vector<std::string>& argv, const std::string& input,
                          std::chrono::milliseconds limit);

// 'text' for a POSIX shell, whatever it contains.
std::string shell_quote(const std::string& text);

}  // namespace daqx::launch
