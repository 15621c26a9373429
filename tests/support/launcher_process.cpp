#include "launcher_process.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

#include "executive_process.hpp"
#include "process.hpp"

namespace daqx::test {

LauncherProcess::LauncherProcess(const std::vector<std::string>& arguments, const std::vector<std::string>& environment,
                                 const std::vector<std::string>& wrapper) {
  static int count = 0;
  output_path_ = scratch_directory() + "/launcher-" + std::to_string(++count) + ".out";
  const std::string program = tool_program("daqx-launch");
  std::vector<std::string> argv(wrapper);
  argv.push_back(program);
  argv.insert(argv.end(), arguments.begin(), arguments.end());
  std::vector<char*> args;
  for (std::string& a : argv) args.push_back(a.data());
  args.push_back(nullptr);
  std::vector<std::string> assignments(environment);
  pid_ = fork();
  if (pid_ == 0) {
    setpgid(0, 0);
    const int fd = open(output_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, STDOUT_FILENO);
    dup2(fd, STDERR_FILENO);
    for (std::string& assignment : assignments) putenv(assignment.data());
    execvp(args[0], args.data());
    _exit(127);
  }
}

LauncherProcess::~LauncherProcess() {
  if (running()) {
    kill(-pid_, SIGKILL);  // the group: a wrapper (salloc) and the launcher under it
    int status = 0;
    waitpid(pid_, &status, 0);
  }
}

bool LauncherProcess::running() {
  if (status_ || pid_ <= 0) return false;
  int status = 0;
  if (waitpid(pid_, &status, WNOHANG) == pid_) status_ = status;
  return !status_;
}

std::optional<int> LauncherProcess::wait(std::chrono::milliseconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (running() && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  if (!status_ || !WIFEXITED(*status_)) return std::nullopt;
  return WEXITSTATUS(*status_);
}

void LauncherProcess::signal(int number) const {
  if (!status_ && pid_ > 0) kill(pid_, number);
}

namespace {

// The parent of pid as /proc says (its stat's fourth field, after the parenthesised name), 0 when gone.
pid_t parent_of(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return 0;
  const std::size_t name_end = line.rfind(')');
  if (name_end == std::string::npos) return 0;
  std::istringstream rest(line.substr(name_end + 1));
  char state = 0;
  pid_t parent = 0;
  rest >> state >> parent;
  return parent;
}

}  // namespace

void LauncherProcess::end_run() const {
  if (status_ || pid_ <= 0) return;
  // The launcher is the daqx-launch process that descends from ours: pid_ itself without a wrapper, a child of
  // the wrapper otherwise (salloc puts its command in a process group of its own).
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return;
  while (const dirent* entry = readdir(proc)) {
    const pid_t pid = static_cast<pid_t>(std::strtol(entry->d_name, nullptr, 10));
    if (pid <= 0) continue;
    std::ifstream comm("/proc/" + std::to_string(pid) + "/comm");
    std::string name;
    if (!std::getline(comm, name) || name != "daqx-launch") continue;
    for (pid_t up = pid; up > 1; up = parent_of(up)) {
      if (up != pid_) continue;
      kill(pid, SIGTERM);
      break;
    }
  }
  closedir(proc);
}

std::string LauncherProcess::output() const {
  std::ifstream in(output_path_);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

double LauncherProcess::summary_counter(const std::string& application, const std::string& metric) const {
  // The launcher names the file with every counter of the run: "... every counter at the end of run N: PATH".
  const std::string marker = "every counter at the end of run ";
  std::istringstream lines(output());
  std::string path;
  for (std::string line; std::getline(lines, line);) {
    const std::size_t at = line.find(marker);
    const std::size_t colon = at == std::string::npos ? at : line.find(": ", at);
    if (colon != std::string::npos) path = line.substr(colon + 2);
  }
  if (path.empty()) return -1;
  std::ifstream counters(path);
  for (std::string line; std::getline(counters, line);) {
    std::istringstream words(line);
    std::string name, counter;
    double number = 0;
    if (words >> name >> counter >> number && name == application && counter == metric) return number;
  }
  return -1;
}

pid_t executive_pid_in_log(const std::string& log_path) {
  const std::string log = read_text(log_path);
  const std::size_t at = log.rfind("ready (pid ");
  return at == std::string::npos ? -1 : static_cast<pid_t>(std::stol(log.substr(at + 11)));
}

std::string LauncherProcess::dashboard_url(std::chrono::milliseconds limit) {
  const std::regex printed("daqx-launch: dashboard: (http://127\\.0\\.0\\.1:[0-9]+)/partition");
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline && running()) {
    std::smatch match;
    const std::string text = output();
    if (std::regex_search(text, match, printed)) return match[1];
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return {};
}

}  // namespace daqx::test
