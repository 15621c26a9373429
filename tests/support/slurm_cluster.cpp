// Runs munged, slurmctld and one slurmd per host of a VirtualCluster, with a configuration and key made per test.
#include "slurm_cluster.hpp"

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "executive_process.hpp"
#include "process_table.hpp"

extern char** environ;

namespace daqx::test {

namespace {

using namespace std::chrono_literals;

constexpr auto stop_grace = 5s;          // every daemon ends within milliseconds of SIGTERM; past this it is killed
constexpr auto sinfo_limit = 10s;        // one sinfo while waiting for the nodes (MessageTimeout is 10 s)
constexpr auto poll_interval = 100ms;    // between two looks at a daemon that is coming up
constexpr int node_port = 6818;          // Slurm's own default: each slurmd has its namespace's ports to itself
constexpr int namespace_controller_port = 6817;  // likewise, for a slurmctld inside a host's namespace

// Every program the harness or a test of it runs.
constexpr const char* required_programs[] = {"munged", "slurmctld", "slurmd", "sinfo", "srun", "salloc",
                                             "sbatch", "squeue", "scontrol", "scancel", "env"};

void write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::trunc);
  out << text;
  if (!out) throw std::runtime_error("SlurmCluster: cannot write " + path);
}

void make_directory(const std::string& path) {
  // 0755: munged insists that everyone may traverse the directory of its socket.
  if (mkdir(path.c_str(), 0755) != 0 && errno != EEXIST) {
    throw std::runtime_error("SlurmCluster: cannot create " + path + ": " + std::strerror(errno));
  }
}

std::string status_text(int status) {
  if (WIFEXITED(status)) return "exit code " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return "signal " + std::to_string(WTERMSIG(status));
  return "status " + std::to_string(status);
}

std::string short_host_name() {
  char name[256] = {};
  gethostname(name, sizeof name - 1);
  std::string text = name;
  return text.substr(0, text.find('.'));
}

// Names of the SLURM_* variables of this program's environment: a client command must not see them, or it would
// act in the job the test program itself may run in rather than on the test's cluster.
std::vector<std::string> inherited_slurm_variables() {
  std::vector<std::string> names;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    std::string assignment = *entry;
    if (assignment.rfind("SLURM_", 0) == 0) names.push_back(assignment.substr(0, assignment.find('=')));
  }
  return names;
}

// slurmctld's port in the test's own namespace, shared with everything on the machine: below the kernel's
// ephemeral range (32768 and up by default), so no outgoing connection is handed it while slurmctld starts, from
// the pid so that concurrent test programs start apart, and free when bound here.
int free_controller_port() {
  static std::mutex mutex;
  static std::set<int> given;  // another SlurmCluster of this program may not have bound its port yet
  std::lock_guard guard(mutex);
  const int first = static_cast<int>(getpid() % 10000);
  for (int step = 0; step < 10000; ++step) {
    const int port = 20000 + (first + step * 7) % 10000;
    if (given.count(port) != 0) continue;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) throw std::runtime_error("SlurmCluster: socket failed");
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_ANY);
    address.sin_port = htons(static_cast<std::uint16_t>(port));
    const bool available = bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0;
    close(fd);
    if (available) {
      given.insert(port);
      return port;
    }
  }
  throw std::runtime_error("SlurmCluster: no free port in 20000..29999 for slurmctld");
}

// Whether a TCP connection to address:port is accepted within `limit` (from the test's namespace: it reaches the
// bridge address and every host's). slurmctld logs each such probe as "error: slurm_receive_msg [...]: Zero Bytes
// were transmitted or received": expected, not a fault.
bool accepts_connections(const std::string& address_text, int port, std::chrono::milliseconds limit) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return false;
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<std::uint16_t>(port));
  inet_pton(AF_INET, address_text.c_str(), &address.sin_addr);
  bool connected = connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0;
  if (!connected && errno == EINPROGRESS) {
    pollfd entry{fd, POLLOUT, 0};
    if (poll(&entry, 1, static_cast<int>(limit.count())) == 1) {
      int error = 0;
      socklen_t length = sizeof error;
      getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length);
      connected = error == 0;
    }
  }
  close(fd);
  return connected;
}

}  // namespace

std::string slurm_program(const std::string& name) { return find_program(name); }

std::string slurm_unavailable_reason() {
  std::string missing;
  for (const char* name : required_programs) {
    if (find_program(name).empty()) missing += (missing.empty() ? "" : ", ") + std::string(name);
  }
  if (missing.empty()) return "";
  return "not installed: " + missing + " (Debian: slurmctld slurmd slurm-client munge)";
}

void skip_test_unless_slurm_available() {
  std::string reason = slurm_unavailable_reason();
  if (reason.empty()) return;
  skip_for_environment("DAQX_NETNS_REQUIRE", netns_skip_exit_code, "Slurm unavailable: " + reason);
}

SlurmCluster::SlurmCluster(const VirtualCluster& cluster, int controller_host, int cpus_per_node,
                           std::chrono::milliseconds ready_limit)
    : cluster_(cluster), controller_host_(controller_host), cpus_per_node_(cpus_per_node) {
  if (controller_host != VirtualCluster::root && (controller_host < 0 || controller_host >= cluster.size())) {
    throw std::out_of_range("SlurmCluster: no host " + std::to_string(controller_host) + " for the controller");
  }
  if (cpus_per_node < 1) throw std::invalid_argument("SlurmCluster: cpus_per_node must be at least 1");
  std::string reason = slurm_unavailable_reason();
  if (!reason.empty()) throw std::runtime_error("Slurm unavailable: " + reason);
  const auto deadline = std::chrono::steady_clock::now() + ready_limit;

  static std::mutex counter_mutex;
  static int counter = 0;
  {
    std::lock_guard guard(counter_mutex);
    ++counter;
  }
  // Unique on the machine while this program lives: it names the state files and shows in every client's output.
  cluster_name_ = "dqx" + std::to_string(getpid()) + "s" + std::to_string(counter);
  directory_ = scratch_directory() + "/slurm-" + cluster_name_;
  conf_path_ = directory_ + "/slurm.conf";
  munge_socket_ = directory_ + "/munge.socket";
  node_port_ = node_port;
  controller_port_ = controller_host == VirtualCluster::root ? free_controller_port() : namespace_controller_port;

  try {
    make_directory(directory_);
    make_directory(directory_ + "/state");
    for (int host = 0; host < cluster.size(); ++host) make_directory(directory_ + "/spool-" + node_name(host));
    write_munge_key();
    write_conf();

    // --force: munged refuses a socket whose directory's parents not everyone may traverse, and
    // scratch_directory() is mkdtemp's 0700; only root, its owner, talks to this munged. In the foreground it
    // logs to stderr, which start() sends to munged.log.
    const Daemon& munged =
        start("munged",
              {slurm_program("munged"), "--foreground", "--force", "--socket=" + munge_socket_,
               "--key-file=" + directory_ + "/munge.key", "--pid-file=" + directory_ + "/munged.pid",
               "--seed-file=" + directory_ + "/munged.seed"},
              controller_host);
    wait_for_file(munge_socket_, munged, deadline);

    start("slurmctld", {slurm_program("slurmctld"), "-D", "-f", conf_path_}, controller_host);
    // The nodes register with the controller once, when they start: it must be listening by then, or they wait
    // for its next ping of unresponsive nodes.
    wait_for_controller(deadline);

    for (int host = 0; host < cluster.size(); ++host) {
      start("slurmd " + node_name(host), {slurm_program("slurmd"), "-D", "-N", node_name(host), "-f", conf_path_},
            host);
    }
    wait_for_idle_nodes(deadline);
  } catch (...) {
    stop_all();
    throw;
  }
}

SlurmCluster::~SlurmCluster() { stop_all(); }

std::string SlurmCluster::node_name(int host) const {
  if (host < 0 || host >= cluster_.size()) {
    throw std::out_of_range("SlurmCluster: no host " + std::to_string(host) + " (size " +
                            std::to_string(cluster_.size()) + ")");
  }
  // Appended rather than "h" + std::to_string(host): GCC 12 warns (-Wrestrict) wrongly on the latter.
  std::string name = "h";
  name += std::to_string(host);
  return name;
}

int SlurmCluster::host_of(const std::string& name) const {
  for (int host = 0; host < cluster_.size(); ++host) {
    if (node_name(host) == name) return host;
  }
  return -1;
}

std::vector<std::string> SlurmCluster::environment() const { return {"SLURM_CONF=" + conf_path_}; }

ProcessResult SlurmCluster::run(const std::vector<std::string>& argv, std::chrono::milliseconds limit) const {
  if (argv.empty()) throw std::invalid_argument("SlurmCluster::run: empty command");
  std::vector<std::string> full = {find_program("env")};
  for (const std::string& name : inherited_slurm_variables()) {
    full.push_back("-u");
    full.push_back(name);
  }
  for (const std::string& assignment : environment()) full.push_back(assignment);
  const std::string program = argv[0].find('/') == std::string::npos ? find_program(argv[0]) : argv[0];
  if (program.empty()) throw std::runtime_error("SlurmCluster::run: no program " + argv[0] + " in PATH");
  full.push_back(program);
  full.insert(full.end(), argv.begin() + 1, argv.end());
  return run_process(full, limit);
}

std::string SlurmCluster::log_tails(std::size_t lines) const {
  std::string text;
  for (const Daemon& daemon : daemons_) {
    text += "---- " + daemon.name + " (" + daemon.log + "), last " + std::to_string(lines) + " lines:\n";
    std::string tail = last_lines(read_text(daemon.log), lines);
    text += tail.empty() ? "(empty)\n" : tail;
    if (!text.empty() && text.back() != '\n') text += '\n';
  }
  return text;
}

void SlurmCluster::write_munge_key() const {
  // Random bytes of our own: mungekey is not in every munge package, and munged takes any key of 32 bytes or more.
  unsigned char key[1024];
  std::size_t filled = 0;
  while (filled < sizeof key) {
    ssize_t got = getrandom(key + filled, sizeof key - filled, 0);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) throw std::runtime_error(std::string("SlurmCluster: getrandom failed: ") + std::strerror(errno));
    filled += static_cast<std::size_t>(got);
  }
  // 0400 from creation on: munged refuses a key that anyone but its owner could ever read.
  const std::string path = directory_ + "/munge.key";
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0400);
  if (fd < 0) throw std::runtime_error("SlurmCluster: cannot create " + path + ": " + std::strerror(errno));
  const bool written = write(fd, key, sizeof key) == static_cast<ssize_t>(sizeof key);
  close(fd);
  if (!written) throw std::runtime_error("SlurmCluster: cannot write " + path);
}

void SlurmCluster::write_conf() const {
  std::ostringstream conf;
  conf << "# One test's Slurm cluster, written by daqx's tests/support/slurm_cluster.cpp; nothing in it is shared.\n"
       << "ClusterName=" << cluster_name_ << "\n"
       // slurmctld only runs where its host name is this machine's; the address is where it is reached.
       << "SlurmctldHost=" << short_host_name() << "(" << controller_address() << ")\n"
       << "SlurmctldPort=" << controller_port_ << "\n"
       << "SlurmdPort=" << node_port_ << "\n"
       << "SlurmUser=root\nSlurmdUser=root\n"
       << "AuthType=auth/munge\nCredType=cred/munge\n"
       << "AuthInfo=socket=" << munge_socket_ << "\n"
       // Everything a daemon writes goes under this directory (the defaults are /run and /var/spool).
       << "StateSaveLocation=" << directory_ << "/state\n"
       << "SlurmdSpoolDir=" << directory_ << "/spool-%n\n"
       << "SlurmctldPidFile=" << directory_ << "/slurmctld.pid\n"
       << "SlurmdPidFile=" << directory_ << "/spool-%n/slurmd.pid\n"
       << "SlurmctldDebug=info\nSlurmdDebug=info\n"
       // No cgroups, no accounting, no MPI: nothing the machine must have been prepared for.
       << "ProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\nJobAcctGatherType=jobacct_gather/none\n"
       << "AccountingStorageType=accounting_storage/none\nJobCompType=jobcomp/none\n"
       << "SwitchType=switch/none\nMpiDefault=none\n"
       << "MailProg=/bin/true\n"  // the default, /bin/mail, is not installed: slurmctld logs an error without it
       << "SchedulerType=sched/backfill\nSelectType=select/cons_tres\nSelectTypeParameters=CR_Core\n"
       // Nodes are what this file says, not what the hardware has: every simulated host is the same machine.
       << "SlurmdParameters=config_overrides\n"
       // A node that was down (a slurmd restarted by a test) serves again as soon as it registers.
       << "ReturnToService=2\n"
       // Short timeouts: a test waits for failures to be noticed.
       << "SlurmdTimeout=10\nMessageTimeout=10\nKillWait=5\nInactiveLimit=0\nMinJobAge=60\n";
  for (int host = 0; host < cluster_.size(); ++host) {
    conf << "NodeName=" << node_name(host) << " NodeAddr=" << cluster_.address(host)
         << " NodeHostname=" << node_name(host) << " CPUs=" << cpus_per_node_ << " State=UNKNOWN\n";
  }
  conf << "PartitionName=" << partition_ << " Nodes=ALL Default=YES MaxTime=INFINITE State=UP\n";
  write_text(conf_path_, conf.str());
}

SlurmCluster::Daemon SlurmCluster::start(const std::string& name, const std::vector<std::string>& argv, int host) {
  std::string file_name = name;
  for (char& c : file_name) {
    if (c == ' ') c = '-';
  }
  Daemon daemon{name, directory_ + "/" + file_name + ".log", -1};

  // Everything the child needs is prepared here: between fork and exec only system calls are safe, the test
  // program may have threads.
  std::vector<std::string> environment_strings;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    if (std::strncmp(*entry, "SLURM_", 6) != 0) environment_strings.push_back(*entry);
  }
  environment_strings.push_back("SLURM_CONF=" + conf_path_);
  std::vector<char*> envp;
  for (std::string& assignment : environment_strings) envp.push_back(assignment.data());
  envp.push_back(nullptr);
  std::vector<std::string> args = argv;
  std::vector<char*> argp;
  for (std::string& arg : args) argp.push_back(arg.data());
  argp.push_back(nullptr);

  int log_fd = open(daemon.log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  // The host's network namespace entered directly, not through `ip netns exec`: that also remounts /sys for the
  // namespace, which hides /sys/fs/cgroup, and slurmd will not start without finding its cgroup version there.
  int namespace_fd = -1;
  if (host != VirtualCluster::root) {
    const std::string path = "/var/run/netns/" + cluster_.namespace_name(host);
    namespace_fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (namespace_fd < 0) {
      const int error = errno;
      if (log_fd >= 0) close(log_fd);
      if (null_fd >= 0) close(null_fd);
      throw std::runtime_error("SlurmCluster: cannot open " + path + ": " + std::strerror(error));
    }
  }
  if (log_fd < 0 || null_fd < 0) {
    if (log_fd >= 0) close(log_fd);
    if (null_fd >= 0) close(null_fd);
    if (namespace_fd >= 0) close(namespace_fd);
    throw std::runtime_error("SlurmCluster: cannot open " + daemon.log + " or /dev/null");
  }
  const pid_t parent = getpid();
  const pid_t child = fork();
  if (child == 0) {
    auto fail = [log_fd](const char* what) {
      ssize_t ignored = write(log_fd, what, std::strlen(what));
      (void)ignored;
      _exit(127);
    };
    // Its own process group: a Ctrl-C at the terminal interrupts the test, which then stops the daemons in order.
    setpgid(0, 0);
    // Dies with the test program, however that ends; checked against a parent that died before the call.
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent) fail("SlurmCluster: parent gone\n");
    if (namespace_fd >= 0 && setns(namespace_fd, CLONE_NEWNET) != 0) fail("SlurmCluster: setns failed\n");
    dup2(null_fd, STDIN_FILENO);
    dup2(log_fd, STDOUT_FILENO);
    dup2(log_fd, STDERR_FILENO);
    execve(argp[0], argp.data(), envp.data());
    fail("SlurmCluster: exec failed\n");
  }
  const int fork_error = errno;
  close(log_fd);
  close(null_fd);
  if (namespace_fd >= 0) close(namespace_fd);
  if (child < 0) throw std::runtime_error(std::string("SlurmCluster: fork failed: ") + std::strerror(fork_error));
  daemon.pid = child;
  daemons_.push_back(daemon);
  return daemons_.back();
}

void SlurmCluster::check_daemons_alive() {
  for (Daemon& daemon : daemons_) {
    if (daemon.pid <= 0) continue;
    int status = 0;
    if (waitpid(daemon.pid, &status, WNOHANG) == daemon.pid) {
      daemon.pid = -1;
      throw std::runtime_error("SlurmCluster: " + daemon.name + " ended (" + status_text(status) +
                               ") while the cluster was coming up\n" + log_tails());
    }
  }
}

void SlurmCluster::wait_for_file(const std::string& path, const Daemon& daemon,
                                 std::chrono::steady_clock::time_point deadline) {
  while (access(path.c_str(), F_OK) != 0) {
    check_daemons_alive();
    if (std::chrono::steady_clock::now() > deadline) {
      throw std::runtime_error("SlurmCluster: " + daemon.name + " did not create " + path + " in time\n" +
                               log_tails());
    }
    std::this_thread::sleep_for(poll_interval);
  }
}

void SlurmCluster::wait_for_controller(std::chrono::steady_clock::time_point deadline) {
  while (!accepts_connections(controller_address(), controller_port_, 1s)) {
    check_daemons_alive();
    if (std::chrono::steady_clock::now() > deadline) {
      throw std::runtime_error("SlurmCluster: slurmctld does not accept connections on " + controller_address() +
                               ":" + std::to_string(controller_port_) + "\n" + log_tails());
    }
    std::this_thread::sleep_for(poll_interval);
  }
}

void SlurmCluster::wait_for_idle_nodes(std::chrono::steady_clock::time_point deadline) {
  std::string last;
  for (;;) {
    // One line per node and partition, "h0 idle"; a node not (yet) answering shows as "unknown", "idle*", "down*".
    ProcessResult result = run({"sinfo", "--noheader", "--Node", "--format=%N %T"}, sinfo_limit);
    last = outcome(result) + ": " + result.output;
    std::set<std::string> idle;
    std::stringstream lines(result.output);
    std::string node, state;
    while (lines >> node >> state) {
      if (state == "idle") idle.insert(node);
    }
    bool all_idle = result.exited && result.exit_code == 0;
    for (int host = 0; host < cluster_.size() && all_idle; ++host) all_idle = idle.count(node_name(host)) != 0;
    if (all_idle) return;
    check_daemons_alive();
    if (std::chrono::steady_clock::now() > deadline) {
      throw std::runtime_error("SlurmCluster: not every node idle in time; last sinfo (" + last + ")\n" +
                               log_tails());
    }
    std::this_thread::sleep_for(poll_interval * 2);
  }
}

void SlurmCluster::kill_job_processes() const {
  // Jobs run as slurmstepd processes, detached from slurmd, with the tasks as their descendants, inside the hosts'
  // namespaces. Frozen (SIGSTOP) as they are found, so that none escapes by forking, then killed.
  std::set<ino_t> namespaces;
  for (int host = 0; host < cluster_.size(); ++host) {
    struct stat namespace_stat {};
    if (::stat(("/var/run/netns/" + cluster_.namespace_name(host)).c_str(), &namespace_stat) == 0) {
      namespaces.insert(namespace_stat.st_ino);
    }
  }
  if (namespaces.empty()) return;
  std::set<pid_t> stopped;
  for (int pass = 0; pass < 20; ++pass) {
    const std::map<pid_t, ProcessEntry> processes = process_table();
    std::vector<pid_t> steps;
    for (const auto& [pid, process] : processes) {
      if (process.command == "slurmstepd" && namespaces.count(process.network_namespace) != 0) steps.push_back(pid);
    }
    const std::set<pid_t> tree = process_trees(processes, steps);
    bool found_new = false;
    for (pid_t pid : tree) {
      if (pid == getpid() || !stopped.insert(pid).second) continue;
      kill(pid, SIGSTOP);
      found_new = true;
    }
    if (!found_new) break;
  }
  for (pid_t pid : stopped) kill(pid, SIGKILL);
}

void SlurmCluster::stop(Daemon& daemon) const {
  if (daemon.pid <= 0) return;
  kill(daemon.pid, SIGTERM);
  reap_or_kill(daemon.pid, stop_grace);
  daemon.pid = -1;
}

void SlurmCluster::stop_all() noexcept {
  try {
    // The node daemons first, so none starts a job step while the steps are killed; the controller and munged,
    // which the others need to the end, last.
    for (auto it = daemons_.rbegin(); it != daemons_.rend(); ++it) {
      if (it->name.rfind("slurmd ", 0) == 0) stop(*it);
    }
    kill_job_processes();
    for (auto it = daemons_.rbegin(); it != daemons_.rend(); ++it) stop(*it);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "SlurmCluster %s: stopping incomplete (%s)\n", cluster_name_.c_str(), error.what());
  }
}

}  // namespace daqx::test
