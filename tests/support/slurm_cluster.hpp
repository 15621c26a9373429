// A real Slurm cluster on the hosts of a VirtualCluster: slurmctld, one slurmd per simulated host and munge for
// their authentication, all private to the test, so that what launches through Slurm (salloc, srun, sbatch) is
// tested against the daemons it meets on real clusters.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

#include "netns.hpp"
#include "process.hpp"

namespace daqx::test {

// Path of a Slurm or munge program (PATH, then the sbin directories), or empty when not installed.
std::string slurm_program(const std::string& name);

// Why SlurmCluster cannot run here (a daemon or client command of Slurm or munge missing), or empty when it can.
std::string slurm_unavailable_reason();

// Second line of a test that needs SlurmCluster (after skip_test_unless_netns_available): returns when Slurm and
// munge are installed, otherwise ends the program as skipped (exit code 77) with the reason, or as failed where
// DAQX_NETNS_REQUIRE=1 (CI): a machine that can build clusters and lacks Slurm is a broken test machine there.
void skip_test_unless_slurm_available();

// Slurm on a VirtualCluster. The constructor writes everything into a directory of its own under
// scratch_directory() and starts:
//   munged     on its own key (random, 0400) and socket; Slurm finds it through AuthInfo=socket=...
//   slurmctld  in the controller's namespace (the test's own by default, reached at address(root) on the bridge)
//   slurmd     one per host, in that host's namespace, named node_name(host), NodeAddr = the host's address
// then waits until sinfo reports every node idle (well under a second on an idle machine). Nothing outside that
// directory is written, and none of the machine's configuration is used: no /etc/slurm, no /etc/munge, no
// systemd, no cgroups (proctrack/linuxproc, task/none, no accounting).
// Client commands (srun, salloc, sbatch, sinfo, squeue, scontrol, scancel) reach this cluster with
// environment(), i.e. SLURM_CONF=conf_path(); run() does that for the test.
//
// The daemons are this program's children, run in the foreground, each with PR_SET_PDEATHSIG: they die with the
// program however it ends (a crash, SIGKILL from a ctest timeout). The signal follows the thread that forked
// them, so construct and destroy a SlurmCluster on one thread that outlives it (a test's own body does).
// Jobs' processes (slurmstepd and the tasks it runs) live in the hosts' namespaces: the destructor kills them,
// and the cluster's watchdog does when the program dies. Destroy the SlurmCluster before its VirtualCluster.
class SlurmCluster {
 public:
  // controller_host: VirtualCluster::root (the test's namespace) or a host, whose namespace then also runs its
  // slurmd. cpus_per_node is what every node declares (more than the machine has is allowed), so that several
  // tasks, one CPU each, fit on one simulated host. Throws std::runtime_error with the daemons' log tails when the
  // cluster does not come up within ready_limit.
  explicit SlurmCluster(const VirtualCluster& cluster, int controller_host = VirtualCluster::root,
                        int cpus_per_node = 4, std::chrono::milliseconds ready_limit = std::chrono::seconds(60));
  ~SlurmCluster();
  SlurmCluster(const SlurmCluster&) = delete;
  SlurmCluster& operator=(const SlurmCluster&) = delete;

  const std::string& directory() const noexcept { return directory_; }
  const std::string& conf_path() const noexcept { return conf_path_; }
  const std::string& cluster_name() const noexcept { return cluster_name_; }
  const std::string& partition() const noexcept { return partition_; }
  int cpus_per_node() const noexcept { return cpus_per_node_; }
  std::string controller_address() const { return cluster_.address(controller_host_); }
  int controller_port() const noexcept { return controller_port_; }

  // "h0", "h1", ...: Slurm's NodeName (and NodeHostName) of host. The node's NodeAddr is cluster.address(host).
  std::string node_name(int host) const;
  // The host whose node is called name, or -1.
  int host_of(const std::string& name) const;

  // What a client command needs in its environment to talk to this cluster: {"SLURM_CONF=<conf_path()>"}.
  // SLURM_* variables the test program inherited (were it itself run inside a Slurm job) are not removed: run()
  // does that, a launcher started by a test should be given a clean environment.
  std::vector<std::string> environment() const;

  // Runs a client command (argv[0] looked up in PATH and the sbin directories unless it contains '/') with
  // environment(), without any SLURM_* variable of the test's own environment, killed past `limit`.
  ProcessResult run(const std::vector<std::string>& argv,
                    std::chrono::milliseconds limit = std::chrono::seconds(30)) const;

  // The last `lines` lines of every daemon's log (munged, slurmctld, each slurmd), each under a header, for the
  // message of a failed test.
  std::string log_tails(std::size_t lines = 20) const;

 private:
  struct Daemon {
    std::string name;  // "munged", "slurmctld", "slurmd h0"
    std::string log;   // its stdout and stderr: the daemons run in the foreground and log there
    pid_t pid = -1;
  };

  void write_munge_key() const;
  void write_conf() const;
  Daemon start(const std::string& name, const std::vector<std::string>& argv, int host);
  void wait_for_file(const std::string& path, const Daemon& daemon, std::chrono::steady_clock::time_point deadline);
  void wait_for_controller(std::chrono::steady_clock::time_point deadline);
  void wait_for_idle_nodes(std::chrono::steady_clock::time_point deadline);
  void check_daemons_alive();
  void kill_job_processes() const;
  void stop(Daemon& daemon) const;
  void stop_all() noexcept;

  const VirtualCluster& cluster_;
  int controller_host_;
  int cpus_per_node_;
  int controller_port_ = 0;
  int node_port_ = 0;
  std::string cluster_name_;
  std::string partition_ = "daqx";
  std::string directory_;
  std::string conf_path_;
  std::string munge_socket_;
  std::vector<Daemon> daemons_;  // in start order: munged, slurmctld, then the slurmds; stopped in reverse
};

}  // namespace daqx::test
