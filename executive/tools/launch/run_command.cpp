#include "run_command.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <algorithm>

namespace daqx::launch {

std::string CommandResult::describe() const {
  std::string text = timed_out ? std::string("no answer in time") : "exit code " + std::to_string(exit_code);
  std::string trimmed = output;
  while (!trimmed.empty() && (trimmed.back() == '\n' || trimmed.back() == '\r')) trimmed.pop_back();
  trimmed.erase(0, trimmed.find_first_not_of("\r\n"));
  // The reason is at the end (ssh prints its error last, after warnings and whatever the remote shell said).
  std::size_t from = trimmed.size();
  for (int lines = 0; lines < kDescribedLines && from != std::string::npos && from > 0; ++lines)
    from = trimmed.rfind('\n', from - 1);
  if (from != std::string::npos && from < trimmed.size()) trimmed = "..." + trimmed.substr(from);
  if (!trimmed.empty()) text += ": " + trimmed;
  return text;
}

CommandResult run_command(const std::vector<std::string>& argv, const std::string& input,
                          std::chrono::milliseconds limit) {
  CommandResult result;
  int to_child[2], from_child[2];
  if (pipe2(to_child, O_CLOEXEC) != 0) return result;
  if (pipe2(from_child, O_CLOEXEC) != 0) {
    close(to_child[0]);
    close(to_child[1]);
    return result;
  }
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    setpgid(0, 0);  // not reached by the terminal's Ctrl-C, and killed as a group past the limit
    dup2(to_child[0], STDIN_FILENO);
    dup2(from_child[1], STDOUT_FILENO);
    dup2(from_child[1], STDERR_FILENO);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    execvp(args[0], args.data());
    const char* reason = std::strerror(errno);
    (void)!write(STDERR_FILENO, args[0], std::strlen(args[0]));
    (void)!write(STDERR_FILENO, ": ", 2);
    (void)!write(STDERR_FILENO, reason, std::strlen(reason));
    _exit(127);
  }
  close(to_child[0]);
  close(from_child[1]);
  if (pid < 0) {
    close(to_child[1]);
    close(from_child[0]);
    result.output = std::string("fork: ") + std::strerror(errno);
    return result;
  }
  // Input and output go together through poll: a child that writes before it reads cannot dead-lock us.
  fcntl(to_child[1], F_SETFL, O_NONBLOCK);
  std::size_t written = 0;
  int in_fd = to_child[1];
  if (input.empty()) {
    close(in_fd);
    in_fd = -1;
  }
  const auto deadline = std::chrono::steady_clock::now() + limit;
  int out_fd = from_child[0];
  while (out_fd >= 0) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      result.timed_out = true;
      break;
    }
    pollfd fds[2] = {{out_fd, POLLIN, 0}, {in_fd, POLLOUT, 0}};
    const int n = ::poll(fds, in_fd >= 0 ? 2 : 1, static_cast<int>(std::min<long long>(left.count(), 200)));
    if (n < 0 && errno != EINTR) break;
    if (fds[0].revents != 0) {
      char buffer[4096];
      const ssize_t got = read(out_fd, buffer, sizeof buffer);
      if (got > 0) {
        if (result.output.size() < (1u << 20)) result.output.append(buffer, static_cast<std::size_t>(got));
      } else if (got == 0 || errno != EINTR) {
        close(out_fd);
        out_fd = -1;
      }
    }
    if (in_fd >= 0 && fds[1].revents != 0) {
      const ssize_t put = write(in_fd, input.data() + written, input.size() - written);
      if (put > 0) written += static_cast<std::size_t>(put);
      if ((put < 0 && errno != EAGAIN && errno != EINTR) || written == input.size()) {
        close(in_fd);
        in_fd = -1;
      }
    }
  }
  if (in_fd >= 0) close(in_fd);
  if (out_fd >= 0) close(out_fd);
  // The output closed: the child has ended or is about to. One that lingers past the limit is killed too.
  int status = 0;
  pid_t reaped = 0;
  while (!result.timed_out && (reaped = waitpid(pid, &status, WNOHANG)) == 0) {
    if (std::chrono::steady_clock::now() >= deadline) {
      result.timed_out = true;
      break;
    }
    usleep(10000);
  }
  if (result.timed_out) {
    kill(-pid, SIGKILL);
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
  }
  if (!result.timed_out && WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  return result;
}

std::string shell_quote(const std::string& text) {
  std::string quoted = "'";
  for (char c : text) {
    if (c == '\'')
      quoted += "'\\''";
    else
      quoted += c;
  }
  return quoted + "'";
}

}  // namespace daqx::launch
