// The ssh engine: each executive runs on its host under an OpenSSH session held by the launcher. Batch mode,
// the user's own ssh configuration (or the one given); the partition is copied to every host first, --fanout
// hosts at a time. The session's standard input is the executive's: when the launcher or the connection dies,
// the executive stops.
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <vector>

#include "child_process.hpp"
#include "daqx/control/control_fanout.hpp"
#include "engine.hpp"
#include "partition_copy.hpp"
#include "remote_limits.hpp"
#include "run_command.hpp"

namespace daqx::launch {
namespace {

constexpr auto kCommandLimit = std::chrono::seconds(30);
constexpr const char* kPidMarker = "daqx-launch: remote pid ";

std::string target_of(const ContextLaunch& context) {
  return context.ssh_target.empty() ? context.context->host : context.ssh_target;
}

// "host daq-bu3", with the ssh target when it is another: how messages name a host.
std::string host_of(const ContextLaunch& context) {
  const std::string target = target_of(context);
  std::string text = "host " + context.context->host;
  if (target != context.context->host) text.append(" (ssh ").append(target).append(")");
  return text;
}

std::string work_dir_of(const ContextLaunch& context) {
  if (!context.work_dir.empty()) return context.work_dir;
  return "/tmp/daqx-launch";
}

class SshEngine;

class SshProcess final : public ContextProcess {
 public:
  SshProcess(const SshEngine& engine, const ContextLaunch& context, const std::vector<std::string>& argv, int log_fd)
      : engine_(engine), target_(target_of(context)), host_(host_of(context)), log_path_(context.log_path),
        child_(argv, {}, log_fd) {}
  std::optional<int> poll() override { return child_.poll(); }
  // The end of the session's input reaches the executive as the end of its own: it stops as on SIGTERM, and
  // ssh returns its exit code.
  void request_stop() override { child_.close_input(); }
  void kill() override;
  std::string where() const override { return host_ + " over ssh"; }

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
    std::vector<std::pair<std::string, std::string>> made(copies_.begin(), copies_.end());
    daqx::for_each_fanned_out(made.size(), options_.fanout, [&](std::size_t i) {
      run_command(ssh_argv(made[i].first, "rm -f " + shell_quote(made[i].second)), "", std::chrono::seconds(10));
    });
  }

  std::string name() const override { return "ssh"; }

  // One copy per ssh target, made by options_.fanout sessions at a time. The first host that fails stops
  // further copies; those under way finish, every one made is removed again by the destructor, and every host
  // that failed is named.
  void prepare(const std::string& partition_path, const std::vector<ContextLaunch>& contexts) override {
    const std::string text = partition_for_hosts(partition_path);
    struct Copy {
      const ContextLaunch* context;
      std::string target, dir, path;
      std::optional<CommandResult> result;  // empty: not tried (a host before it failed)
    };
    std::vector<Copy> copies;
    std::set<std::string> targets;
    for (const ContextLaunch& context : contexts) {
      const std::string target = target_of(context);
      if (targets.insert(target).second && copies_.count(target) == 0)
        copies.push_back({&context, target, work_dir_of(context), work_dir_of(context) + "/" + copy_name_, {}});
    }
    std::atomic<bool> failed{false};
    daqx::for_each_fanned_out(copies.size(), options_.fanout, [&](std::size_t i) {
      Copy& copy = copies[i];
      if (failed) return;  // a host has failed: no further copy begins
      // Written beside, under a name of this session's own ($$), and renamed: an executive never reads half a
      // partition, and hosts that share the folder (a network file system) never write the same file.
      const std::string part = shell_quote(copy.path) + ".$$.part";
      const std::string command = "umask 077 && mkdir -p " + shell_quote(copy.dir) + " && cat > " + part + " && mv -f " +
                                  part + " " + shell_quote(copy.path);
      copy.result = run_command(ssh_argv(copy.target, command), text, kCommandLimit);
      if (!copy.result->ok()) failed = true;
    });
    std::vector<std::string> failures;
    for (const Copy& copy : copies) {
      if (copy.result && copy.result->ok()) copies_[copy.target] = copy.path;
      else if (copy.result)
        failures.push_back(host_of(*copy.context) + " cannot be reached or written: " + copy.result->describe());
    }
    if (failures.size() == 1) throw LaunchError(failures.front() + "; nothing was started");
    if (!failures.empty()) {
      std::string message = std::to_string(failures.size()) + " hosts cannot be reached or written; nothing was started:";
      for (const std::string& failure : failures) message.append("\n  ").append(failure);
      throw LaunchError(message);
    }
  }

  std::unique_ptr<ContextProcess> start(const ContextLaunch& context, int log_fd) override {
    const std::string target = target_of(context);
    const auto copy = copies_.find(target);
    if (copy == copies_.end()) throw LaunchError("the partition was not copied to " + target);
    const std::string command = "echo " + shell_quote(kPidMarker) + "$$; " +
                                executive_command(context, executive_arguments(copy->second, context));
    return std::make_unique<SshProcess>(*this, context, ssh_argv(target, command), log_fd);
  }

  HostLimits host_limits(const ContextLaunch& context) override {
    const std::string target = target_of(context);
    const CommandResult answer = run_command(ssh_argv(target, executive_command(context, {kHostLimitsArgument})), "", kCommandLimit);
    return read_host_limits(answer, "host " + context.context->host + " (ssh " + target + ")");
  }

  // "exec env NAME=VALUE ... EXECUTIVE ARGUMENTS": the context's executive in its environment, for the remote shell.
  static std::string executive_command(const ContextLaunch& context, const std::vector<std::string>& arguments) {
    std::string command = "exec";
    if (!context.environment.empty()) {
      command += " env";
      for (const auto& [name, value] : context.environment) command.append(" ").append(shell_quote(name + "=" + value));
    }
    command.append(" ").append(shell_quote(context.executive));
    for (const std::string& argument : arguments) command.append(" ").append(shell_quote(argument));
    return command;
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
