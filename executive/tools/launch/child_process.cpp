#include "child_process.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

namespace daqx::launch {

ChildProcess::ChildProcess(const std::vector<std::string>& argv,
                           const std::vector<std::pair<std::string, std::string>>& environment, int log_fd,
                           const std::vector<std::string>& unset) {
  if (argv.empty()) throw std::runtime_error("no program to start");
  int input[2];
  if (pipe2(input, O_CLOEXEC) != 0) throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  // Everything the child needs is prepared before fork: between fork and exec only async-signal-safe calls.
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  std::vector<std::string> assignments;
  for (const auto& [name, value] : environment) assignments.push_back(name + "=" + value);
  pid_ = fork();
  if (pid_ < 0) {
    const int error = errno;
    close(input[0]);
    close(input[1]);
    throw std::runtime_error(std::string("fork: ") + std::strerror(error));
  }
  if (pid_ == 0) {
    // Its own process group: a Ctrl-C at the terminal reaches the launcher only, which then stops the
    // contexts in order (stop, halt, then their processes) instead of every process dying at once.
    setpgid(0, 0);
    dup2(input[0], STDIN_FILENO);
    dup2(log_fd, STDOUT_FILENO);
    dup2(log_fd, STDERR_FILENO);
    for (const std::string& name : unset) unsetenv(name.c_str());
    for (std::string& assignment : assignments) putenv(assignment.data());
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    execvp(args[0], args.data());
    const char* reason = std::strerror(errno);
    (void)!write(STDERR_FILENO, "daqx-launch: cannot run ", 24);
    (void)!write(STDERR_FILENO, args[0], std::strlen(args[0]));
    (void)!write(STDERR_FILENO, ": ", 2);
    (void)!write(STDERR_FILENO, reason, std::strlen(reason));
    (void)!write(STDERR_FILENO, "\n", 1);
    _exit(127);
  }
  close(input[0]);
  input_fd_ = input[1];
}

ChildProcess::~ChildProcess() {
  close_input();
  if (!poll()) {
    ::kill(pid_, SIGKILL);
    int status = 0;
    while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
  }
}

std::optional<int> ChildProcess::poll() {
  if (status_ || pid_ <= 0) return status_;
  int status = 0;
  if (waitpid(pid_, &status, WNOHANG) == pid_) status_ = status;
  return status_;
}

void ChildProcess::close_input() {
  if (input_fd_ >= 0) close(input_fd_);
  input_fd_ = -1;
}

void ChildProcess::signal(int number) const {
  if (!status_ && pid_ > 0) ::kill(pid_, number);
}

std::string describe_wait_status(int status) {
  if (WIFEXITED(status)) return "exit code " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return std::string("killed by signal ") + std::to_string(WTERMSIG(status)) + " (" + strsignal(WTERMSIG(status)) + ")";
  return "wait status " + std::to_string(status);
}

bool exited_cleanly(int status) { return WIFEXITED(status) && WEXITSTATUS(status) == 0; }

}  // namespace daqx::launch
