// Real OpenSSH servers on the hosts of a VirtualCluster, and an ssh client configuration that reaches them, so
// that what starts processes over ssh (the launcher) is tested against the sshd it meets on real machines.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "netns.hpp"

namespace daqx::test {

// Paths of OpenSSH's programs (PATH, then the sbin directories), or empty when not installed.
std::string sshd_program();
std::string ssh_program();
std::string ssh_keygen_program();

// Why SshHosts cannot run here (a program of OpenSSH missing), or empty when it can.
std::string ssh_unavailable_reason();

// Second line of a test that needs SshHosts (after skip_test_unless_netns_available): returns when OpenSSH is
// installed, otherwise ends the program as skipped (exit code 77) with the reason, or as failed where
// DAQX_NETNS_REQUIRE=1 (CI): a machine that can build clusters and lacks sshd is a broken test machine there.
void skip_test_unless_ssh_available();

// One sshd per host of the cluster, listening on that host's address only, started by the constructor and
// killed, with every session it started, by the destructor (and, should the test program die, by the cluster's
// watchdog, which kills whatever runs in the namespaces). Keys, configurations and logs live in a directory of
// their own under scratch_directory():
//   host_ed25519_key   one host key for every host (they are all the same machine; tests need not tell them apart)
//   client_ed25519_key the key the client logs in with, the only line of authorized_keys
//   known_hosts        the host key under every host's address: the client checks it strictly, nothing is learnt
//   ssh_config         for `ssh -F`: root, that key, batch mode, known_hosts, short timeouts, keep-alives
//   sshd-hN.conf, sshd-hN.log, sshd-hN.pid   host N's server
// Nothing outside that directory is read or written, except that sshd needs its privilege-separation directory
// /run/sshd, created (root, 0755) when missing. The servers run without PAM (nothing of /etc/pam.d involved),
// unless root's account is locked with '!', which sshd without PAM refuses even for keys: then with PAM.
// Remote commands run as `bash -c COMMAND` (root's shell), which reads /root/.bashrc: Debian's bash does when
// started by sshd, so what that file puts in PATH or prints reaches every remote command.
class SshHosts {
 public:
  // Starts every host's sshd and waits until `ssh -F client_config_path() ADDRESS true` works for each; throws
  // std::runtime_error with the tail of the failing host's log otherwise.
  explicit SshHosts(const VirtualCluster& cluster, std::uint16_t port = 22,
                    std::chrono::milliseconds ready_limit = std::chrono::seconds(60));
  ~SshHosts();
  SshHosts(const SshHosts&) = delete;
  SshHosts& operator=(const SshHosts&) = delete;

  const std::string& directory() const noexcept { return directory_; }
  const std::string& client_config_path() const noexcept { return client_config_; }
  std::uint16_t port() const noexcept { return port_; }
  std::string address(int host) const { return cluster_.address(host); }

  // {ssh, "-F", client_config_path(), "--", address(host), remote_command}. The remote command is one string
  // that the remote user's shell parses (`bash -c`), as ssh always does. Options (-tt, -o ...) go before "--".
  std::vector<std::string> ssh_argv(int host, const std::string& remote_command) const;

  // Ends host's sshd with SIGTERM, as `systemctl stop ssh` does on Debian: new connections are refused at once,
  // sessions already open keep running (the unit's KillMode=process) until kill_sessions or the destructor.
  void stop_host(int host);
  // Starts host's sshd again (if stopped) and waits until ssh to it works; throws as the constructor does.
  void start_host(int host, std::chrono::milliseconds ready_limit = std::chrono::seconds(60));
  bool running(int host);

  // The processes of host's sshd: the listener, its sessions (those stop_host left running too) and everything
  // they run. Not what escaped from a session (a daemon, a command left behind by a session that ended): the
  // cluster kills that when it is removed.
  std::vector<pid_t> processes(int host) const;
  // Kills host's sessions and what they run (SIGKILL, the tree frozen first so nothing escapes by forking),
  // the listener too when `listener` is true. Only this object's: another SshHosts on the cluster is spared.
  void kill_sessions(int host, bool listener = false);

  // A process followed by pid and start time, so that a pid given to a newer process is not taken for it.
  struct Tracked {
    pid_t pid = -1;
    unsigned long long start_time = 0;
  };

  // The last `lines` lines of host's sshd log (LogLevel VERBOSE: connections, keys accepted, sessions).
  std::string log_tail(int host, std::size_t lines = 20) const;

 private:
  struct Server {
    pid_t pid = -1;  // the listener, our child: `ip netns exec` execs sshd in place
    Tracked listener;
    std::vector<Tracked> orphaned_sessions;  // sessions of a listener stop_host ended
    std::string config;
    std::string log;
  };

  std::vector<Tracked> roots(int host, bool listener) const;  // what processes/kill_sessions follow down

  void check_host(int host) const;
  void start_server(int host);
  void wait_ready(int host, std::chrono::milliseconds limit);
  void reap(int host, std::chrono::milliseconds grace);

  const VirtualCluster& cluster_;
  std::uint16_t port_;
  std::string directory_;
  std::string client_config_;
  bool use_pam_ = false;  // only where root's account is locked with '!' (see the constructor)
  std::vector<Server> servers_;
};

}  // namespace daqx::test
