// The ssh harness (support/ssh_hosts.*): real sshd on each simulated host, reached with `ssh -F` as a launcher
// reaches real machines. Skipped (exit code 77) where namespaces or OpenSSH are unavailable.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <memory>
#include <string>
#include <thread>

#include "../support/netns.hpp"
#include "../support/process.hpp"
#include "../support/ssh_hosts.hpp"

using namespace daqx::test;
using namespace std::chrono_literals;

namespace {

// An ssh client left running while the test goes on (run_process waits for its end), output discarded.
class BackgroundClient {
 public:
  explicit BackgroundClient(std::vector<std::string> argv) {
    std::vector<char*> args;
    for (std::string& arg : argv) args.push_back(arg.data());
    args.push_back(nullptr);
    pid_ = fork();
    if (pid_ == 0) {
      const int null_fd = open("/dev/null", O_RDWR);
      dup2(null_fd, STDIN_FILENO);
      dup2(null_fd, STDOUT_FILENO);
      dup2(null_fd, STDERR_FILENO);
      execv(args[0], args.data());
      _exit(127);
    }
  }
  ~BackgroundClient() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  BackgroundClient(const BackgroundClient&) = delete;
  BackgroundClient& operator=(const BackgroundClient&) = delete;

  // Its exit code once it ended within `limit`, else -1 (still running).
  int wait_exit(std::chrono::milliseconds limit) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < deadline) {
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
      std::this_thread::sleep_for(20ms);
    }
    return -1;
  }

 private:
  pid_t pid_ = -1;
};

std::string command_name(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/comm");
  std::string name;
  std::getline(in, name);
  return name;
}

bool runs_a(const SshHosts& ssh, int host, const std::string& name) {
  const std::vector<pid_t> pids = ssh.processes(host);
  return std::any_of(pids.begin(), pids.end(), [&](pid_t pid) { return command_name(pid) == name; });
}

bool wait_until_runs_a(const SshHosts& ssh, int host, const std::string& name) {
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  while (std::chrono::steady_clock::now() < deadline) {
    if (runs_a(ssh, host, name)) return true;
    std::this_thread::sleep_for(50ms);
  }
  return false;
}

std::string processes_in_namespace(const VirtualCluster& cluster, int host) {
  return run_process({ip_program(), "netns", "pids", cluster.namespace_name(host)}, 10s).output;
}

}  // namespace

TEST_CASE("ssh reaches each simulated host at its own address, and one whose sshd is stopped refuses at once",
          "[cluster][ssh]") {
  skip_test_unless_netns_available();
  skip_test_unless_ssh_available();
  VirtualCluster cluster(2);
  SshHosts ssh(cluster);

  for (int host = 0; host < cluster.size(); ++host) {
    const ProcessResult shown = run_process(ssh.ssh_argv(host, "ip -4 -o addr show eth0"), 30s);
    INFO("host " << host << ": " << shown.output << "\nsshd log:\n" << ssh.log_tail(host));
    REQUIRE(shown.exited);
    REQUIRE(shown.exit_code == 0);
    CHECK(shown.output.find("inet " + cluster.address(host) + "/24") != std::string::npos);
  }

  ssh.stop_host(1);
  CHECK_FALSE(ssh.running(1));
  const auto started = std::chrono::steady_clock::now();
  const ProcessResult refused = run_process(ssh.ssh_argv(1, "true"), 30s);
  const auto took = std::chrono::steady_clock::now() - started;
  INFO(refused.output);
  CHECK(refused.exit_code == 255);
  CHECK(refused.output.find("connect to host " + cluster.address(1) + " port 22: Connection refused") !=
        std::string::npos);
  CHECK(took < 3s);  // refused by the host's kernel at once: no wait for ConnectTimeout (5 s)
  CHECK(run_process(ssh.ssh_argv(0, "true"), 30s).exit_code == 0);  // the other host is unaffected

  ssh.start_host(1);
  CHECK(ssh.running(1));
  CHECK(run_process(ssh.ssh_argv(1, "true"), 30s).exit_code == 0);
}

TEST_CASE("sessions outlive a stopped sshd as on Debian, and nothing the servers started outlives the harness",
          "[cluster][ssh]") {
  skip_test_unless_netns_available();
  skip_test_unless_ssh_available();
  VirtualCluster cluster(2);
  auto ssh = std::make_unique<SshHosts>(cluster);

  BackgroundClient on_host1(ssh->ssh_argv(1, "exec sleep 300"));
  REQUIRE(wait_until_runs_a(*ssh, 1, "sleep"));
  ssh->stop_host(1);
  CHECK(run_process(ssh->ssh_argv(1, "true"), 30s).exit_code == 255);
  CHECK(runs_a(*ssh, 1, "sleep"));
  CHECK(on_host1.wait_exit(0ms) == -1);
  ssh->kill_sessions(1);
  CHECK(ssh->processes(1).empty());
  CHECK(on_host1.wait_exit(10s) == 255);  // the client sees its connection closed

  BackgroundClient on_host0(ssh->ssh_argv(0, "exec sleep 300"));
  REQUIRE(wait_until_runs_a(*ssh, 0, "sleep"));
  ssh.reset();  // kills host 0's listener, its session and the sleep
  CHECK(on_host0.wait_exit(10s) == 255);
  // Not even what ran inside the namespaces is left (the cluster would kill it only when it is removed).
  CHECK(processes_in_namespace(cluster, 0).empty());
  CHECK(processes_in_namespace(cluster, 1).empty());
}
