// Starting real processes from tests: run to completion with a time bound, or keep one running.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstddef>
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

// Starts argv[0] with argv in the background, its output (stdout and stderr) written to the file log_path
// (created or truncated), with extra_env ("NAME=value") set; returns its pid. The caller reaps it.
pid_t start_process(std::vector<std::string> argv, const std::string& log_path,
                    const std::vector<std::string>& extra_env = {});

// The same with a pseudo-terminal (TERM=xterm, 60 rows of 200 columns) as its standard input, output and error,
// as when a user runs it in a terminal window: what it writes there, escape sequences included.
ProcessResult run_in_terminal(const std::vector<std::string>& argv, std::chrono::milliseconds limit,
                              const std::vector<std::string>& extra_env = {});

// Ends a test that cannot run here (no namespaces, a helper not built): exit code skip_code, which ctest reports
// as skipped, with the reason on stdout; or, when the environment variable `require` is 1 (CI sets it: there a
// test that should have run and did not is a failure), exit code 1 with the same reason.
// A check of this process that failed before the call is never hidden: the exit code is then 1 too. What the test
// started and left running (executives, launchers) is ended first (end_descendants).
[[noreturn]] void skip_for_environment(const char* require, int skip_code, const std::string& reason);

// Ends every process below this one, children and theirs, for a test cut short: SIGTERM for an orderly stop, then
// SIGKILL for what is left after `grace`; reaps the children.
void end_descendants(std::chrono::milliseconds grace);

// Called by the Catch main (catch_main.cpp) when a check fails, for skip_for_environment.
void note_failed_check();

// Directory of the running test program (the build tree), for finding helper programs beside it.
std::string program_directory();

// The path of a program in PATH or, after it, the sbin and bin directories (ctest and sudo may run with a PATH
// without the sbin directories where ip, sshd and the Slurm daemons live); empty when there is none.
std::string find_program(const std::string& name);

// A whole file as text; empty when it cannot be read.
std::string read_text(const std::string& path);

// The last `lines` lines of a text (a log), for a test's message.
std::string last_lines(const std::string& text, std::size_t lines);

// Waits up to `grace` for the child `pid` (already told to stop) to end, then kills it (SIGKILL); reaps it.
void reap_or_kill(pid_t pid, std::chrono::milliseconds grace);

// "exit code 3", "killed by signal 9", "timed out": how a run_process ended, in words.
std::string outcome(const ProcessResult& result);
// The same for a wait status from waitpid: "exit code 3", "killed by signal 11 (Segmentation fault)".
std::string wait_status_words(int status);

// Threads of this process now (/proc/self/task); no assertion inside, so it may be called on any thread.
// Unreadable: a count no check accepts.
std::size_t threads_of_this_process();

}  // namespace daqx::test
