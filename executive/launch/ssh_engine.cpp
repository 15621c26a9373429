// The ssh engine: each executive runs on its host under an OpenSSH session held by the launcher. Batch mode,
// the user's own ssh configuration (or the one given); the partition is copied to each host first. The
// session's standard input is the executive's: when the launcher or the connection dies, the executive stops.
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <map>
#include <sstream>

#include "child_process.hpp"
#include "engine.hpp"
#include "partition_copy.hpp"
#include "run_command.hpp"

namespace daqx::launch {
namespace {

constexpr auto kCommandLimit = std::chrono::seconds(30);
constexpr const char* kPidMarker = "daqx-launch: remote pid ";

std::string target_of(const ContextLaunch& context) {
  return context.ssh_target.empty() ? context.context->host : context.ssh_target;
}

std::string work_dir_of(const ContextLaunch& context) {
  if (!context.work_dir.empty()) return context.work_dir;
  return "/tmp/daqx-launch";
}

class SshEngine;

class SshProcess final : public ContextProcess {
 public:
  SshProcess(const SshEngine& engine, const ContextLaunch& context, const std::vector<std::string>& argv, int log_fd)
      : engine_(engine), target_(target_of(context)), host_(context.context->host), log_path_(context.log_path),
        child_(argv, {}, log_fd) {}
  std::optional<int> poll() override { return child_.poll(); }
  // The end of the session's input reaches the executive as the end of its own: it stops as on SIGTERM, and
  // ssh returns its exit code.
  void request_stop() override { child_.close_input(); }
  void kill() override;
  std::string where() const override {
    std::string text = "host " + host_;
    if (target_ != host_) text.append(" (ssh ").append(target_).append(")");
    return text.append(" over ssh");
  }

 private:
  // The remote shell prints its pid before it becomes the executive (exec keeps the pid).
  std::string remote_pid() const {
    std::ifstream log(log_path_);
    std::string line, pid;
    while (std::getline(log, line))
      if (line.rfind(kPidMarker, 0) == 0) pid = line.substr(std::char_traits<char>::length(kPidMarker));
    return pid.substr(0, pid.find_first_not_of("0123456789"));
  }

  const SshEngine& engine_;
  std::string target_, host_, log_path_;
  ChildProcess child_;
};

class SshEngine final : public Engine {
 public:
  explicit SshEngine(SshOptions options) : options_(std::move(options)) {
    char host[256] = {};
    gethostname(host, sizeof host - 1);
    // One copy per launch: a second launcher's partition, or an edited one, never replaces this one's.
    copy_name_ = "partition." + std::string(host) + "." + std::to_string(getpid()) + ".xml";
  }
  ~SshEngine() override {
    for (const auto& [target, path] : copies_) run_command(ssh_argv(target, "rm -f " + shell_quote(path)), "", std::chrono::seconds(10));
  }

  std::string name() const override { return "ssh"; }

  void prepare(const std::string& partition_path, const std::vector<ContextLaunch>& contexts) override {
    const std::string text = partition_for_hosts(partition_path);
    for (const ContextLaunch& context : contexts) {
      const std::string target = target_of(context);
      const std::string dir = work_dir_of(context);
      const std::string path = dir + "/" + copy_name_;
      if (copies_.count(target) != 0) continue;
      // Written beside and renamed: an executive never reads half a partition.
      const std::string command = "umask 077 && mkdir -p " + shell_quote(dir) + " && cat > " + shell_quote(path + ".part") +
                                  " && mv -f " + shell_quote(path + ".part") + " " + shell_quote(path);
      const CommandResult copied = run_command(ssh_argv(target, command), text, kCommandLimit);
      if (!copied.ok())
        throw LaunchError("host " + context.context->host + " (ssh " + target + ") cannot be reached or written: " +
                          copied.describe());
      copies_[target] = path;
    }
  }

  std::unique_ptr<ContextProcess> start(const ContextLaunch& context, int log_fd) override {
    const std::string target = target_of(context);
    const auto copy = copies_.find(target);
    if (copy == copies_.end()) throw LaunchError("the partition was not copied to " + target);
    std::string command = "echo ";
    command.append(shell_quote(kPidMarker)).append("$$; exec");
    if (!context.environment.empty()) {
      command += " env";
      for (const auto& [name, value] : context.environment) command.append(" ").append(shell_quote(name + "=" + value));
    }
    command.append(" ").append(shell_quote(context.executive));
    for (const std::string& argument : executive_arguments(copy->second, context))
      command.append(" ").append(shell_quote(argument));
    return std::make_unique<SshProcess>(*this, context, ssh_argv(target, command), log_fd);
  }

  std::vector<std::string> ssh_argv(const std::string& target, const std::string& command) const {
    std::vector<std::string> argv{options_.program};
    if (!options_.config_file.empty()) argv.insert(argv.end(), {"-F", options_.config_file});
    // ssh keeps the first value it gets for an option: the user's come first, then the defaults a launcher
    // needs (never a prompt, a dead host noticed within seconds, no terminal).
    for (const std::string& option : options_.options) argv.insert(argv.end(), {"-o", option});
    argv.insert(argv.end(), {"-o", "BatchMode=yes", "-o", "ConnectTimeout=10", "-o", "ServerAliveInterval=5", "-o",
                             "ServerAliveCountMax=3", "-T", target, "--", command});
    return argv;
  }

 private:
  SshOptions options_;
  std::string copy_name_;
  std::map<std::string, std::string> copies_;  // ssh target -> where the partition is there
};

void SshProcess::kill() {
  const std::string pid = remote_pid();
  if (!pid.empty())
    run_command(engine_.ssh_argv(target_, "kill -KILL " + pid + " 2>/dev/null"), "", std::chrono::seconds(15));
  child_.signal(SIGKILL);
}

}  // namespace

std::unique_ptr<Engine> make_ssh_engine(SshOptions options) { return std::make_unique<SshEngine>(std::move(options)); }

}  // namespace daqx::launch
