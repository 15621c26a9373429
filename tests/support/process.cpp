// Subprocess runner for tests: fork/exec with a pipe for output, a deadline and group kill.
#include "process.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <pty.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <climits>
#include <cstring>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "process_table.hpp"

namespace daqx::test {

namespace {

// Reads `fd` (the child's output) until every writer has closed it or `limit` passes (then kills the child's
// group), closes it and reaps the child.
ProcessResult collect_output(int fd, pid_t child, std::chrono::milliseconds limit) {
  ProcessResult result;
  const auto deadline = std::chrono::steady_clock::now() + limit;
  char buffer[4096];
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      result.timed_out = true;
      kill(-child, SIGKILL);
      break;
    }
    pollfd poll_fd{fd, POLLIN, 0};
    const int ready = poll(&poll_fd, 1, static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) continue;
    const ssize_t got = read(fd, buffer, sizeof buffer);
    if (got <= 0) break;  // every writer closed (a terminal: EIO): the child is gone or closed its output
    result.output.append(buffer, static_cast<std::size_t>(got));
  }
  close(fd);
  int status = 0;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status)) {
    result.exited = true;
    result.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    result.signal = WTERMSIG(status);
  }
  return result;
}

// In the child: `extra_env` added, argv[0] run in place of this process.
[[noreturn]] void exec_program(const std::vector<std::string>& argv, const std::vector<std::string>& extra_env) {
  for (const std::string& assignment : extra_env) putenv(const_cast<char*>(assignment.c_str()));
  std::vector<char*> args;
  for (const std::string& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
  args.push_back(nullptr);
  execv(args[0], args.data());
  _exit(127);
}

}  // namespace

pid_t start_process(std::vector<std::string> argv, const std::string& log_path,
                    const std::vector<std::string>& extra_env) {
  const int log_fd = open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (log_fd < 0) throw std::runtime_error("cannot open " + log_path + ": " + std::strerror(errno));
  const pid_t child = fork();
  if (child < 0) throw std::runtime_error("fork failed");
  if (child == 0) {
    dup2(log_fd, STDOUT_FILENO);
    dup2(log_fd, STDERR_FILENO);
    exec_program(argv, extra_env);
  }
  close(log_fd);
  return child;
}

ProcessResult run_process(const std::vector<std::string>& argv, std::chrono::milliseconds limit,
                          const std::vector<std::string>& extra_env) {
  int pipe_fds[2];
  if (pipe2(pipe_fds, O_CLOEXEC) != 0) throw std::runtime_error("pipe2 failed");
  pid_t child = fork();
  if (child < 0) throw std::runtime_error("fork failed");
  if (child == 0) {
    setpgid(0, 0);
    dup2(pipe_fds[1], STDOUT_FILENO);
    dup2(pipe_fds[1], STDERR_FILENO);
    exec_program(argv, extra_env);
  }
  close(pipe_fds[1]);
  return collect_output(pipe_fds[0], child, limit);
}

ProcessResult run_in_terminal(const std::vector<std::string>& argv, std::chrono::milliseconds limit,
                              const std::vector<std::string>& extra_env) {
  int terminal = -1;
  winsize size{};
  size.ws_row = 60;
  size.ws_col = 200;
  const pid_t child = forkpty(&terminal, nullptr, nullptr, &size);
  if (child < 0) throw std::runtime_error("forkpty failed");
  if (child == 0) {  // a session leader with the terminal as its controlling one: its group is its pid
    setenv("TERM", "xterm", 1);
    exec_program(argv, extra_env);
  }
  return collect_output(terminal, child, limit);
}

std::string program_directory() {
  char path[PATH_MAX];
  ssize_t length = readlink("/proc/self/exe", path, sizeof path - 1);
  if (length <= 0) return ".";
  std::string full(path, static_cast<std::size_t>(length));
  return full.substr(0, full.rfind('/'));
}

namespace {
std::atomic<bool> a_check_failed{false};
}  // namespace

void note_failed_check() { a_check_failed = true; }

void end_descendants(std::chrono::milliseconds grace) {
  std::set<pid_t> below = process_trees(process_table(), {getpid()});
  below.erase(getpid());
  if (below.empty()) return;
  for (pid_t pid : below) kill(pid, SIGTERM);
  const auto deadline = std::chrono::steady_clock::now() + grace;
  for (;;) {
    while (waitpid(-1, nullptr, WNOHANG) > 0) {
    }
    bool left = false;
    for (pid_t pid : below) left = left || kill(pid, 0) == 0;
    if (!left || std::chrono::steady_clock::now() > deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  for (pid_t pid : below) kill(pid, SIGKILL);
  while (waitpid(-1, nullptr, WNOHANG) > 0) {
  }
}

void skip_for_environment(const char* require, int skip_code, const std::string& reason) {
  const char* required = std::getenv(require);
  const bool required_here = required != nullptr && std::string(required) == "1";
  const bool fail = required_here || a_check_failed;
  if (required_here)
    std::printf("FAILED: %s (%s=1: a test that cannot run is a failure here)\n", reason.c_str(), require);
  else if (a_check_failed)
    std::printf("FAILED: a check failed before the test found it cannot run all of it here: %s\n", reason.c_str());
  else
    std::printf("SKIPPED: %s\n", reason.c_str());
  end_descendants(std::chrono::seconds(5));
  std::fflush(stdout);
  std::fflush(stderr);
  // _Exit, not exit: a test was cut short, and the leak checker of the sanitizer build would report what the
  // test framework still holds and turn the skip into a failure.
  std::_Exit(fail ? 1 : skip_code);
}

std::string find_program(const std::string& name) {
  std::string path = std::getenv("PATH") != nullptr ? std::getenv("PATH") : "";
  path += ":/usr/sbin:/sbin:/usr/bin:/bin";
  std::stringstream directories(path);
  std::string directory;
  while (std::getline(directories, directory, ':')) {
    if (directory.empty()) continue;
    const std::string candidate = directory + "/" + name;
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string last_lines(const std::string& text, std::size_t lines) {
  std::size_t start = text.size();
  std::size_t seen = 0;
  // A final newline ends the last line; it does not start an empty one.
  if (start > 0 && text[start - 1] == '\n') --start;
  while (start > 0) {
    if (text[start - 1] == '\n' && ++seen == lines) break;
    --start;
  }
  return text.substr(start);
}

std::string outcome(const ProcessResult& result) {
  if (result.timed_out) return "timed out";
  if (!result.exited) return "killed by signal " + std::to_string(result.signal);
  return "exit code " + std::to_string(result.exit_code);
}

std::string wait_status_words(int status) {
  if (WIFEXITED(status)) return "exit code " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    std::string words = "killed by signal ";
    words.append(std::to_string(WTERMSIG(status))).append(" (").append(strsignal(WTERMSIG(status))).append(")");
    return words;
  }
  return "wait status " + std::to_string(status);
}

void reap_or_kill(pid_t pid, std::chrono::milliseconds grace) {
  const auto deadline = std::chrono::steady_clock::now() + grace;
  int status = 0;
  for (;;) {
    const pid_t reaped = waitpid(pid, &status, WNOHANG);
    if (reaped == pid || (reaped < 0 && errno != EINTR)) return;
    if (std::chrono::steady_clock::now() > deadline) break;
    usleep(5000);
  }
  kill(pid, SIGKILL);
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
}

std::size_t threads_of_this_process() {
  std::size_t count = 0;
  DIR* tasks = opendir("/proc/self/task");
  if (tasks == nullptr) return static_cast<std::size_t>(-1);
  while (const dirent* entry = readdir(tasks))
    if (entry->d_name[0] != '.') ++count;
  closedir(tasks);
  return count;
}

}  // namespace daqx::test
