// Starting real processes from tests: run to completion with a time bound, or keep one running.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

namespace daqx::test {

struct ProcessResult {
  bool exited = false;    // exited normally (else killed by a signal)
  int exit_code = -1;     // when exited
  int signal = 0;         // when killed
  bool timed_out = false; // we killed it because it ran past its bound
  std::string output;     // stdout and stderr together
};

// Runs argv[0] with argv, waits at most `limit`, and kills the whole process group past it.
ProcessResult run_process(const std::vector<std::string>& argv, std::chrono::milliseconds limit,
                          const std::vector<std::string>& extra_env = {});

// Directory of the running test program (the build tree), for finding helper programs beside it.
std::string program_directory();

}  // namespace daqx::test
