// Runs OpenSSH's sshd inside each namespace of a VirtualCluster, with keys and configurations made per test.
#include "ssh_hosts.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "executive_process.hpp"
#include "process_table.hpp"

namespace daqx::test {

namespace {

using namespace std::chrono_literals;

constexpr auto keygen_limit = 30s;    // ed25519 keys take milliseconds; the bound is against a hang
constexpr auto attempt_limit = 15s;   // one `ssh ... true` while waiting for a server (ConnectTimeout is 5 s)
constexpr auto stop_grace = 10s;      // sshd ends at once on SIGTERM; past this it is killed
constexpr const char* locked_account_message = "because account is locked";

void write_text(const std::string& path, const std::string& text, mode_t mode) {
  {
    std::ofstream out(path, std::ios::trunc);
    out << text;
    if (!out) throw std::runtime_error("SshHosts: cannot write " + path);
  }
  chmod(path.c_str(), mode);
}

void make_key(const std::string& path, const std::string& comment) {
  ProcessResult made =
      run_process({ssh_keygen_program(), "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", path}, keygen_limit);
  if (!made.exited || made.exit_code != 0) {
    throw std::runtime_error("SshHosts: ssh-keygen " + path + " failed (" + outcome(made) + "): " + made.output);
  }
}

// sshd chroots its unprivileged half into /run/sshd and refuses to start without it. Debian's packaging makes
// it at boot (tmpfiles, or the init script); on a machine that never started the ssh service it is missing.
void ensure_privilege_separation_directory() {
  const char* path = "/run/sshd";
  if (mkdir(path, 0755) != 0 && errno != EEXIST) {
    throw std::runtime_error(std::string("SshHosts: cannot create ") + path + ": " + std::strerror(errno));
  }
}

// The roots still alive (same pid, same start time) and all their descendants.
std::set<pid_t> process_trees(const std::vector<SshHosts::Tracked>& roots) {
  const std::map<pid_t, ProcessEntry> table = process_table();
  std::vector<pid_t> alive;
  for (const SshHosts::Tracked& root : roots) {
    auto found = table.find(root.pid);
    if (found != table.end() && found->second.start_time == root.start_time) alive.push_back(root.pid);
  }
  return process_trees(table, alive);
}

// The children of `parent` now, as roots to follow.
std::vector<SshHosts::Tracked> children_of(pid_t parent) {
  std::vector<SshHosts::Tracked> found;
  for (const auto& [pid, process] : process_table()) {
    if (process.parent == parent) found.push_back({pid, process.start_time});
  }
  return found;
}

SshHosts::Tracked tracked(pid_t pid) {
  const std::map<pid_t, ProcessEntry> table = process_table();
  auto found = table.find(pid);
  return {pid, found != table.end() ? found->second.start_time : 0};
}

}  // namespace

std::string sshd_program() {
  static const std::string program = find_program("sshd");
  return program;
}

std::string ssh_program() {
  static const std::string program = find_program("ssh");
  return program;
}

std::string ssh_keygen_program() {
  static const std::string program = find_program("ssh-keygen");
  return program;
}

std::string ssh_unavailable_reason() {
  if (sshd_program().empty()) return "no sshd (install openssh-server)";
  if (ssh_program().empty()) return "no ssh client (install openssh-client)";
  if (ssh_keygen_program().empty()) return "no ssh-keygen (install openssh-client)";
  return "";
}

void skip_test_unless_ssh_available() {
  std::string reason = ssh_unavailable_reason();
  if (reason.empty()) return;
  skip_for_environment("DAQX_NETNS_REQUIRE", netns_skip_exit_code, "OpenSSH unavailable: " + reason);
}

SshHosts::SshHosts(const VirtualCluster& cluster, std::uint16_t port, std::chrono::milliseconds ready_limit)
    : cluster_(cluster), port_(port) {
  std::string reason = ssh_unavailable_reason();
  if (!reason.empty()) throw std::runtime_error("SshHosts: OpenSSH unavailable: " + reason);
  static int instances = 0;
  directory_ = scratch_directory() + "/ssh-" + std::to_string(++instances);
  // Keys below a directory only root may enter: ssh and sshd refuse private keys others can read, and other
  // users of the machine have no business with them.
  if (mkdir(directory_.c_str(), 0700) != 0) {
    throw std::runtime_error("SshHosts: cannot create " + directory_ + ": " + std::strerror(errno));
  }
  ensure_privilege_separation_directory();
  make_key(directory_ + "/host_ed25519_key", "daqx-test-host");
  make_key(directory_ + "/client_ed25519_key", "daqx-test-client");
  write_text(directory_ + "/authorized_keys", read_text(directory_ + "/client_ed25519_key.pub"), 0600);

  // Every host presents the same key; each address gets its line, so StrictHostKeyChecking has nothing to learn.
  std::istringstream public_key(read_text(directory_ + "/host_ed25519_key.pub"));
  std::string type, key;
  public_key >> type >> key;
  std::string known_hosts;
  for (int host = 0; host < cluster_.size(); ++host) {
    // Off port 22, ssh looks the host up as "[address]:port".
    if (port_ == 22) {
      known_hosts.append(address(host));
    } else {
      known_hosts.append("[").append(address(host)).append("]:").append(std::to_string(port_));
    }
    known_hosts.append(" ").append(type).append(" ").append(key).append("\n");
  }
  write_text(directory_ + "/known_hosts", known_hosts, 0600);

  client_config_ = directory_ + "/ssh_config";
  write_text(client_config_,
             "# For `ssh -F`: the simulated hosts of " + cluster_.subnet() +
                 ", written by the test harness (tests/support/ssh_hosts.cpp).\n"
                 "Host *\n"
                 "  User root\n"
                 "  Port " + std::to_string(port_) + "\n"
                 "  IdentityFile " + directory_ + "/client_ed25519_key\n"
                 // Only the test's key: an agent or ~/.ssh keys of whoever runs the tests must not be offered.
                 "  IdentitiesOnly yes\n"
                 "  IdentityAgent none\n"
                 // Never a prompt: a question nobody answers would hang the test until its timeout.
                 "  BatchMode yes\n"
                 "  StrictHostKeyChecking yes\n"
                 "  UserKnownHostsFile " + directory_ + "/known_hosts\n"
                 "  GlobalKnownHostsFile /dev/null\n"
                 "  UpdateHostKeys no\n"
                 "  ConnectTimeout 5\n"
                 "  ConnectionAttempts 1\n"
                 // A session whose host vanished without a FIN ends after 2 s x 3 unanswered keep-alives.
                 "  ServerAliveInterval 2\n"
                 "  ServerAliveCountMax 3\n"
                 "  ControlMaster no\n"
                 "  ControlPath none\n"
                 "  LogLevel ERROR\n",
             0600);

  servers_.resize(static_cast<std::size_t>(cluster_.size()));
  try {
    for (int host = 0; host < cluster_.size(); ++host) start_server(host);
    try {
      wait_ready(0, ready_limit);
    } catch (const std::runtime_error&) {
      // Without PAM sshd refuses any login, keys included, to an account whose password field starts with '!'
      // (root on some installations). Through PAM it does not: Debian's own sshd_config runs with UsePAM yes.
      if (use_pam_ || read_text(servers_[0].log).find(locked_account_message) == std::string::npos) throw;
      use_pam_ = true;
      for (int host = 0; host < cluster_.size(); ++host) {
        kill_sessions(host, true);
        reap(host, stop_grace);
        start_server(host);
      }
      wait_ready(0, ready_limit);
    }
    for (int host = 1; host < cluster_.size(); ++host) wait_ready(host, ready_limit);
  } catch (...) {
    for (int host = 0; host < cluster_.size(); ++host) {
      kill_sessions(host, true);
      reap(host, stop_grace);
    }
    throw;
  }
}

SshHosts::~SshHosts() {
  for (int host = 0; host < cluster_.size(); ++host) {
    kill_sessions(host, true);
    reap(host, stop_grace);
  }
}

void SshHosts::check_host(int host) const {
  if (host < 0 || host >= cluster_.size()) {
    throw std::out_of_range("SshHosts: no host " + std::to_string(host) + " (size " +
                            std::to_string(cluster_.size()) + ")");
  }
}

std::vector<std::string> SshHosts::ssh_argv(int host, const std::string& remote_command) const {
  return {ssh_program(), "-F", client_config_, "--", address(host), remote_command};
}

void SshHosts::start_server(int host) {
  check_host(host);
  Server& server = servers_[static_cast<std::size_t>(host)];
  if (server.pid > 0) return;
  const std::string base = directory_ + "/sshd-h" + std::to_string(host);
  server.config = base + ".conf";
  server.log = base + ".log";
  write_text(server.config,
             "# sshd of simulated host " + std::to_string(host) + ", written by tests/support/ssh_hosts.cpp.\n"
             "ListenAddress " + address(host) + "\n"
             "Port " + std::to_string(port_) + "\n"
             "HostKey " + directory_ + "/host_ed25519_key\n"
             "PidFile " + base + ".pid\n"
             "LogLevel VERBOSE\n"
             "AuthorizedKeysFile " + directory_ + "/authorized_keys\n"
             "PubkeyAuthentication yes\n"
             "PasswordAuthentication no\n"
             "KbdInteractiveAuthentication no\n"
             "PermitRootLogin prohibit-password\n"
             "UsePAM " + (use_pam_ ? "yes" : "no") + "\n"
             // StrictModes checks every directory from the key file up to /, and /tmp (1777, where the scratch
             // directory lives) is world-writable: "bad ownership or modes for directory /tmp". The files are
             // the harness's own, in a 0700 directory; there is nothing for the check to protect.
             "StrictModes no\n"
             "UseDNS no\n"
             "PrintMotd no\n",
             0600);
  std::vector<std::string> arguments = cluster_.exec_prefix(host);
  // -D: stay in the foreground, our child, so the pid is the listener's; -E: log to our file, not syslog.
  arguments.insert(arguments.end(), {sshd_program(), "-D", "-e", "-f", server.config, "-E", server.log});
  std::vector<char*> argv;
  for (std::string& argument : arguments) argv.push_back(argument.data());
  argv.push_back(nullptr);
  // What sshd prints before it opens its log (a bad option, a missing key) lands in the same file.
  const int log_fd = open(server.log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (log_fd < 0) throw std::runtime_error("SshHosts: cannot open " + server.log + ": " + std::strerror(errno));
  const pid_t child = fork();
  if (child < 0) {
    close(log_fd);
    throw std::runtime_error("SshHosts: fork failed");
  }
  if (child == 0) {
    // Only async-signal-safe calls until exec: the test program may have threads.
    const int null_fd = open("/dev/null", O_RDONLY);
    dup2(null_fd, STDIN_FILENO);
    dup2(log_fd, STDOUT_FILENO);
    dup2(log_fd, STDERR_FILENO);
    execv(argv[0], argv.data());
    _exit(127);
  }
  close(log_fd);
  server.pid = child;
  server.listener = tracked(child);
}

void SshHosts::wait_ready(int host, std::chrono::milliseconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  ProcessResult attempt;
  for (;;) {
    attempt = run_process(ssh_argv(host, "true"), attempt_limit);
    if (attempt.exited && attempt.exit_code == 0) return;
    // The first attempts may come before sshd listens ("Connection refused"): that is what we wait out. A dead
    // server, a refused key or host key, or the end of the time is not: waiting would not change it.
    const bool alive = running(host);
    const bool refused = attempt.output.find("Permission denied") != std::string::npos ||
                         attempt.output.find("Host key verification failed") != std::string::npos;
    if (!alive || refused || std::chrono::steady_clock::now() > deadline) {
      const Server& server = servers_[static_cast<std::size_t>(host)];
      throw std::runtime_error(
          "SshHosts: ssh to host " + std::to_string(host) + " (" + address(host) + ") " +
          (!alive     ? std::string("impossible: sshd exited")
           : refused ? std::string("refused")
                     : "still failing after " + std::to_string(limit.count()) + " ms") +
          "; last attempt " + outcome(attempt) + ": " + attempt.output + "\nsshd log " + server.log +
          " ends with:\n" + log_tail(host));
    }
    std::this_thread::sleep_for(100ms);
  }
}

void SshHosts::reap(int host, std::chrono::milliseconds grace) {
  Server& server = servers_[static_cast<std::size_t>(host)];
  if (server.pid <= 0) return;
  reap_or_kill(server.pid, grace);
  server.pid = -1;
}

void SshHosts::stop_host(int host) {
  check_host(host);
  Server& server = servers_[static_cast<std::size_t>(host)];
  if (server.pid <= 0) return;
  // The sessions become orphans (children of init) once the listener is gone: note them now, the listener
  // stopped so that none is born after the count, to find them later for kill_sessions and the destructor.
  kill(server.pid, SIGSTOP);
  const std::vector<Tracked> sessions = children_of(server.pid);
  server.orphaned_sessions.insert(server.orphaned_sessions.end(), sessions.begin(), sessions.end());
  kill(server.pid, SIGTERM);
  kill(server.pid, SIGCONT);
  reap(host, stop_grace);
}

void SshHosts::start_host(int host, std::chrono::milliseconds ready_limit) {
  check_host(host);
  start_server(host);
  wait_ready(host, ready_limit);
}

bool SshHosts::running(int host) {
  check_host(host);
  Server& server = servers_[static_cast<std::size_t>(host)];
  if (server.pid <= 0) return false;
  int status = 0;
  if (waitpid(server.pid, &status, WNOHANG) == server.pid) server.pid = -1;
  return server.pid > 0;
}

std::vector<SshHosts::Tracked> SshHosts::roots(int host, bool listener) const {
  const Server& server = servers_[static_cast<std::size_t>(host)];
  std::vector<Tracked> found = server.orphaned_sessions;
  if (server.pid > 0) {
    if (listener) {
      found.push_back(server.listener);
    } else {
      const std::vector<Tracked> sessions = children_of(server.pid);
      found.insert(found.end(), sessions.begin(), sessions.end());
    }
  }
  return found;
}

std::vector<pid_t> SshHosts::processes(int host) const {
  check_host(host);
  const std::set<pid_t> tree = process_trees(roots(host, true));
  return {tree.begin(), tree.end()};
}

void SshHosts::kill_sessions(int host, bool listener) {
  check_host(host);
  // Stopped before killed, round after round until a scan finds nothing new: a stopped process cannot fork,
  // so no child is born between the scan that would have found it and the kill.
  std::set<pid_t> stopped;
  for (int round = 0; round < 100; ++round) {
    bool found_new = false;
    for (pid_t pid : process_trees(roots(host, listener))) {
      if (stopped.insert(pid).second) {
        kill(pid, SIGSTOP);
        found_new = true;
      }
    }
    if (!found_new) break;
  }
  for (pid_t pid : stopped) kill(pid, SIGKILL);
  servers_[static_cast<std::size_t>(host)].orphaned_sessions.clear();
  if (listener) reap(host, stop_grace);
}

std::string SshHosts::log_tail(int host, std::size_t lines) const {
  check_host(host);
  return last_lines(read_text(servers_[static_cast<std::size_t>(host)].log), lines);
}

}  // namespace daqx::test
