// Builds and removes virtual clusters of network namespaces with `ip`, every command bounded in time.
#include "netns.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <set>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace daqx::test {

namespace {

using namespace std::chrono_literals;

constexpr auto command_limit = 10s;  // any one `ip` command; they take milliseconds when the machine is sane
constexpr auto lock_limit = 30s;     // waiting for another test program to finish choosing its subnet

std::string first_line(const std::string& text) {
  std::string line = text.substr(0, text.find('\n'));
  return line.empty() ? "(no output)" : line;
}

std::string joined(const std::vector<std::string>& argv) {
  std::string text;
  for (const std::string& arg : argv) text += (text.empty() ? "" : " ") + arg;
  return text;
}

bool succeeded(const ProcessResult& result) { return result.exited && result.exit_code == 0 && !result.timed_out; }

ProcessResult ip(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {ip_program()};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_process(argv, command_limit);
}

void ip_or_throw(const std::vector<std::string>& args) {
  ProcessResult result = ip(args);
  if (!succeeded(result)) {
    throw std::runtime_error("`ip " + joined(args) + "` failed (" + outcome(result) +
                             "): " + first_line(result.output));
  }
}

std::vector<std::string> words(const std::string& text) {
  std::vector<std::string> all;
  std::stringstream stream(text);
  std::string word;
  while (stream >> word) all.push_back(word);
  return all;
}

// Names the harness gives everything: dqx<pid> then a letter. The pid, or 0 for a name not of that form.
pid_t owner_pid(const std::string& name) {
  if (name.rfind("dqx", 0) != 0) return 0;
  std::size_t end = 3;
  while (end < name.size() && name[end] >= '0' && name[end] <= '9') ++end;
  if (end == 3 || end == name.size() || name[end] < 'a' || name[end] > 'z' || end - 3 > 9) return 0;
  return static_cast<pid_t>(std::stol(name.substr(3, end - 3)));
}

bool process_exists(pid_t pid) { return kill(pid, 0) == 0 || errno != ESRCH; }

std::vector<std::string> namespace_names() {
  std::vector<std::string> names;
  std::stringstream lines(ip({"netns", "list"}).output);
  std::string line;
  while (std::getline(lines, line)) {
    std::vector<std::string> fields = words(line);  // "NAME (id: 3)"
    if (!fields.empty()) names.push_back(fields[0]);
  }
  return names;
}

std::vector<std::string> link_names() {
  std::vector<std::string> names;
  std::stringstream lines(ip({"-o", "link", "show"}).output);
  std::string line;
  while (std::getline(lines, line)) {
    std::vector<std::string> fields = words(line);  // "7: NAME@if8: <BROADCAST,...> ..."
    if (fields.size() < 2) continue;
    std::string name = fields[1];
    name = name.substr(0, name.find_first_of("@:"));
    names.push_back(name);
  }
  return names;
}

bool link_exists(const std::string& name) { return access(("/sys/class/net/" + name).c_str(), F_OK) == 0; }

// Processes left inside a namespace would keep it, and its veth, alive after `ip netns del`.
void kill_processes_in(const std::string& namespace_name) {
  for (const std::string& word : words(ip({"netns", "pids", namespace_name}).output)) {
    pid_t pid = static_cast<pid_t>(std::atol(word.c_str()));
    if (pid > 1 && pid != getpid()) kill(pid, SIGKILL);
  }
}

// Held while a program removes stale objects and claims a subnet, so two programs never claim the same one.
class MachineLock {
 public:
  MachineLock() {
    const char* path = access("/run/lock", W_OK) == 0 ? "/run/lock/daqx-netns.lock" : "/tmp/daqx-netns.lock";
    fd_ = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    if (fd_ < 0) throw std::runtime_error(std::string("cannot open ") + path + ": " + std::strerror(errno));
    auto deadline = std::chrono::steady_clock::now() + lock_limit;
    while (flock(fd_, LOCK_EX | LOCK_NB) != 0) {
      if (std::chrono::steady_clock::now() > deadline) {
        close(fd_);
        throw std::runtime_error(std::string("another program held ") + path + " for too long");
      }
      std::this_thread::sleep_for(10ms);
    }
  }
  ~MachineLock() { close(fd_); }
  MachineLock(const MachineLock&) = delete;
  MachineLock& operator=(const MachineLock&) = delete;

 private:
  int fd_ = -1;
};

// Whether any address or route of the test's namespace touches 10.233.X.0/24: another program's cluster, or a
// real network we must not shadow. Default routes do not count: ours is more specific and stays on the bridge.
std::set<int> subnets_in_use() {
  std::set<int> used;
  std::string text = ip({"-4", "-o", "addr", "show"}).output + ip({"-4", "route", "show", "table", "all"}).output;
  for (const std::string& word : words(text)) {
    std::string address_text = word.substr(0, word.find('/'));
    in_addr address{};
    if (inet_pton(AF_INET, address_text.c_str(), &address) != 1) continue;
    int length = 32;
    if (word.find('/') != std::string::npos) length = std::atoi(word.c_str() + word.find('/') + 1);
    if (length <= 0) continue;
    std::uint32_t value = ntohl(address.s_addr);
    for (int x = 1; x <= 254; ++x) {
      std::uint32_t ours = (10u << 24) | (233u << 16) | (static_cast<std::uint32_t>(x) << 8);
      int common = std::min(length, 24);
      if ((value >> (32 - common)) == (ours >> (32 - common))) used.insert(x);
    }
  }
  return used;
}

std::mutex registry_mutex;
std::set<int> live_slots;  // slots of this program's live clusters: names must differ between them

// The watchdog: a shell, detached from the test program, that waits for the program to end (its end of a pipe
// closes however the program ends, SIGKILL from a ctest timeout included) and then removes whatever is left
// under the program's names. Detached (own session, reparented) so a kill of the program's tree spares it.
void start_watchdog() {
  // Per pid, not once: a forked copy of the test program that makes clusters needs a watchdog of its own.
  static std::mutex mutex;
  static pid_t watched = 0;
  std::lock_guard guard(mutex);
  if (watched == getpid()) return;
  watched = getpid();
  static const char* script =
      "read -r _ignored\n"  // returns only at end of file: the test program is gone
      "prefix=\"dqx$1\"; ip=\"$2\"\n"
      "t() { if command -v timeout >/dev/null; then timeout 10 \"$@\"; else \"$@\"; fi; }\n"
      "names=$(t \"$ip\" netns list | cut -d' ' -f1 | grep \"^${prefix}[a-z]\")\n"
      "for ns in $names; do for p in $(t \"$ip\" netns pids \"$ns\"); do kill -9 \"$p\"; done; done\n"
      "for l in $(t \"$ip\" -o link show | cut -d: -f2 | cut -d@ -f1 | grep \"^ *${prefix}[a-z]\"); do\n"
      "  t \"$ip\" link del \"$l\"\n"
      "done\n"
      "for ns in $names; do t \"$ip\" netns del \"$ns\"; done\n";
  std::string pid_text = std::to_string(getpid());
  std::vector<std::string> args = {"/bin/sh", "-c", script, "daqx-netns-watchdog", pid_text, ip_program()};
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return;
  pid_t middle = fork();
  if (middle == 0) {
    // Only async-signal-safe calls until exec: the test program may have threads.
    setsid();
    if (fork() != 0) _exit(0);
    int null_fd = open("/dev/null", O_RDWR);
    dup2(fds[0], STDIN_FILENO);
    dup2(null_fd, STDOUT_FILENO);  // never ctest's pipe: ctest would wait for it to close
    dup2(null_fd, STDERR_FILENO);
    for (int fd = 3; fd < 4096; ++fd) close(fd);
    execv(argv[0], argv.data());
    _exit(127);
  }
  close(fds[0]);
  if (middle > 0) {
    while (waitpid(middle, nullptr, 0) < 0 && errno == EINTR) {
    }
  }
  // fds[1] stays open, unused, until the program ends: its closing is the signal.
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::string text;
  std::getline(in, text);
  return text;
}

}  // namespace

std::string ip_program() {
  static const std::string program = find_program("ip");
  return program;
}

std::string netns_unavailable_reason() {
  static const std::string reason = []() -> std::string {
    if (ip_program().empty()) return "no `ip` program (install iproute2)";
    if (geteuid() != 0) return "not root (euid " + std::to_string(geteuid()) + "): namespaces need root";
    std::string pid = std::to_string(getpid());
    std::string name = "dqx" + pid + "probe";  // names of the usual form, so a stale one is cleaned up too
    std::string veth = "dqx" + pid + "pv";
    std::string bridge = "dqx" + pid + "pb";
    std::string why;
    ProcessResult result = ip({"netns", "add", name});
    if (!succeeded(result)) return "cannot create a network namespace (`ip netns add`): " + first_line(result.output);
    result = ip({"link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", name});
    if (!succeeded(result)) why = "cannot create a veth pair into a namespace: " + first_line(result.output);
    result = ip({"link", "add", bridge, "type", "bridge"});
    if (why.empty() && !succeeded(result)) why = "cannot create a bridge: " + first_line(result.output);
    if (link_exists(bridge)) ip({"link", "del", bridge});
    if (link_exists(veth)) ip({"link", "del", veth});
    ip({"netns", "del", name});
    return why;
  }();
  return reason;
}

void skip_test_unless_netns_available() {
  std::string reason = netns_unavailable_reason();
  if (reason.empty()) return;
  skip_for_environment("DAQX_NETNS_REQUIRE", netns_skip_exit_code, "network namespaces unavailable: " + reason);
}

std::vector<std::string> remove_stale_netns_objects() {
  std::vector<std::string> removed;
  auto stale = [](const std::string& name) {
    pid_t pid = owner_pid(name);
    return pid > 0 && pid != getpid() && !process_exists(pid);
  };
  std::vector<std::string> namespaces;
  for (const std::string& name : namespace_names()) {
    if (stale(name)) namespaces.push_back(name);
  }
  for (const std::string& name : namespaces) kill_processes_in(name);
  for (const std::string& name : link_names()) {
    if (stale(name) && succeeded(ip({"link", "del", name}))) removed.push_back("link " + name);
  }
  for (const std::string& name : namespaces) {
    if (succeeded(ip({"netns", "del", name}))) removed.push_back("netns " + name);
  }
  return removed;
}

VirtualCluster::VirtualCluster(int hosts) : hosts_(hosts) {
  if (hosts < 1 || hosts > 253) throw std::invalid_argument("VirtualCluster: hosts must be 1..253");
  std::string reason = netns_unavailable_reason();
  if (!reason.empty()) throw std::runtime_error("network namespaces unavailable: " + reason);
  {
    std::lock_guard guard(registry_mutex);
    slot_ = 0;
    while (live_slots.count(slot_) != 0) ++slot_;
    live_slots.insert(slot_);
  }
  prefix_ = "dqx" + std::to_string(getpid()) + "c" + std::to_string(slot_);
  try {
    if (link_name(hosts - 1).size() > 15) {
      throw std::runtime_error("VirtualCluster: interface name " + link_name(hosts - 1) +
                               " longer than the kernel's 15 characters (too many hosts or live clusters)");
    }
    start_watchdog();
    {
      MachineLock lock;
      remove_stale_netns_objects();
      std::set<int> used = subnets_in_use();
      int first = static_cast<int>(getpid() % 254) + 1;  // from the pid: concurrent programs start apart
      for (int step = 0; step < 254 && subnet_ < 0; ++step) {
        int x = (first - 1 + step) % 254 + 1;
        if (used.count(x) == 0) subnet_ = x;
      }
      if (subnet_ < 0) {
        throw std::runtime_error("VirtualCluster: every 10.233.X.0/24 overlaps an address or route of this machine");
      }
      // The bridge gets its address before the lock is released: from then on other programs see it taken.
      ip_or_throw({"link", "add", prefix_, "type", "bridge", "stp_state", "0"});
      bridge_created_ = true;
      ip_or_throw({"addr", "add", address(root) + "/24", "dev", prefix_});
      ip_or_throw({"link", "set", prefix_, "up"});
    }
    for (int host = 0; host < hosts; ++host) {
      std::string name = namespace_name(host);
      ip_or_throw({"netns", "add", name});
      namespaces_created_ = host + 1;
      // Created with its peer already inside the namespace, named eth0 there: no second name on the machine.
      ip_or_throw({"link", "add", link_name(host), "type", "veth", "peer", "name", "eth0", "netns", name});
      links_created_ = host + 1;
      ip_or_throw({"link", "set", link_name(host), "master", prefix_, "up"});
      ip_or_throw({"-n", name, "link", "set", "lo", "up"});
      ip_or_throw({"-n", name, "addr", "add", address(host) + "/24", "dev", "eth0"});
      ip_or_throw({"-n", name, "link", "set", "eth0", "up"});
    }
    // The root end reports "up" once its peer is up: then the first packet does not race the link.
    auto deadline = std::chrono::steady_clock::now() + 5s;
    for (int host = 0; host < hosts; ++host) {
      std::string state_path = "/sys/class/net/" + link_name(host) + "/operstate";
      while (read_file(state_path) != "up") {
        if (std::chrono::steady_clock::now() > deadline) {
          throw std::runtime_error("VirtualCluster: " + link_name(host) + " did not come up (" +
                                   read_file(state_path) + ")");
        }
        std::this_thread::sleep_for(5ms);
      }
    }
  } catch (...) {
    remove();
    throw;
  }
}

VirtualCluster::~VirtualCluster() { remove(); }

void VirtualCluster::remove() noexcept {
  try {
    for (int host = 0; host < namespaces_created_; ++host) kill_processes_in(namespace_name(host));
    // The veth first, from our side: deleting it is immediate, whereas a namespace's own devices go away
    // asynchronously after `ip netns del`, and a test checking right after would still see them.
    for (int host = 0; host < links_created_; ++host) {
      if (link_exists(link_name(host))) ip({"link", "del", link_name(host)});
    }
    for (int host = 0; host < namespaces_created_; ++host) ip({"netns", "del", namespace_name(host)});
    if (bridge_created_) ip({"link", "del", prefix_});
  } catch (const std::exception& error) {
    std::fprintf(stderr, "VirtualCluster %s: removal incomplete (%s); the watchdog retries at exit\n",
                 prefix_.c_str(), error.what());
  }
  links_created_ = 0;
  namespaces_created_ = 0;
  bridge_created_ = false;
  if (slot_ >= 0) {
    std::lock_guard guard(registry_mutex);
    live_slots.erase(slot_);
    slot_ = -1;
  }
}

void VirtualCluster::check_host(int host) const {
  if (host < 0 || host >= hosts_) {
    throw std::out_of_range("VirtualCluster: no host " + std::to_string(host) + " (size " +
                            std::to_string(hosts_) + ")");
  }
}

std::string VirtualCluster::address(int host) const {
  if (host != root) check_host(host);
  return "10.233." + std::to_string(subnet_) + "." + std::to_string(host == root ? 254 : host + 1);
}

std::string VirtualCluster::url(int host, std::uint16_t port) const {
  return "http://" + address(host) + ":" + std::to_string(port);
}

std::string VirtualCluster::namespace_name(int host) const {
  check_host(host);
  return prefix_ + "h" + std::to_string(host);
}

std::string VirtualCluster::link_name(int host) const { return namespace_name(host); }

std::string VirtualCluster::subnet() const { return "10.233." + std::to_string(subnet_) + ".0/24"; }

std::vector<std::string> VirtualCluster::exec_prefix(int host) const {
  return {ip_program(), "netns", "exec", namespace_name(host)};
}

ProcessResult VirtualCluster::run(int host, const std::vector<std::string>& argv,
                                  std::chrono::milliseconds limit) const {
  std::vector<std::string> full = exec_prefix(host);
  full.insert(full.end(), argv.begin(), argv.end());
  return run_process(full, limit);
}

std::unique_ptr<ExecutiveProcess> VirtualCluster::start_executive(int host, const std::string& partition_path,
                                                                  std::uint16_t port,
                                                                  std::vector<std::string> extra_args) const {
  // `ip netns exec` execs the program in place: the pid ExecutiveProcess holds is the executive's own.
  return std::make_unique<ExecutiveProcess>(partition_path, url(host, port), std::move(extra_args),
                                            executive_program(), exec_prefix(host));
}

namespace {

// What the check's child reports through its pipe when a step fails.
struct TcpFailure {
  int step;
  int error;
};

constexpr const char* tcp_steps[] = {
    "enter the listener's namespace", "listen", "enter the connector's namespace", "connect", "accept", "send",
    "echo", "receive echo", "wrong byte echoed"};
constexpr int tcp_step_count = static_cast<int>(sizeof tcp_steps / sizeof tcp_steps[0]);

// Waits for fd to be ready for `events`; false on timeout (errno ETIMEDOUT) or error.
bool wait_for(int fd, short events, int milliseconds) {
  pollfd entry{fd, events, 0};
  for (;;) {
    int ready = poll(&entry, 1, milliseconds);
    if (ready > 0) return true;
    if (ready == 0) {
      errno = ETIMEDOUT;
      return false;
    }
    if (errno != EINTR) return false;
  }
}

}  // namespace

std::string VirtualCluster::check_tcp(int from, int to, std::chrono::milliseconds limit) const {
  auto namespace_path = [this](int host) {
    return host == root ? std::string("/proc/self/ns/net") : "/var/run/netns/" + namespace_name(host);
  };
  std::string route = (from == root ? std::string("root") : address(from)) + " -> " + address(to);
  sockaddr_in target{};
  target.sin_family = AF_INET;
  inet_pton(AF_INET, address(to).c_str(), &target.sin_addr);
  int step_ms = static_cast<int>(limit.count());
  int from_fd = open(namespace_path(from).c_str(), O_RDONLY | O_CLOEXEC);
  if (from_fd < 0) return "TCP " + route + ": open " + namespace_path(from) + ": " + std::strerror(errno);
  int to_fd = open(namespace_path(to).c_str(), O_RDONLY | O_CLOEXEC);
  if (to_fd < 0) {
    std::string failure = "TCP " + route + ": open " + namespace_path(to) + ": " + std::strerror(errno);
    close(from_fd);
    return failure;
  }
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    close(from_fd);
    close(to_fd);
    throw std::runtime_error("pipe2 failed");
  }

  // A child does the work: a socket stays in the namespace it was made in, so one process can listen in `to`,
  // then switch and connect from `from`, while the test program itself never leaves its namespace.
  // Only system calls in the child: the test program may have threads.
  pid_t child = fork();
  if (child < 0) throw std::runtime_error("fork failed");
  if (child == 0) {
    auto fail = [&](int step) {
      TcpFailure failure{step, errno};
      ssize_t ignored = write(fds[1], &failure, sizeof failure);
      (void)ignored;
      _exit(1);
    };
    if (setns(to_fd, CLONE_NEWNET) != 0) fail(0);
    int listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in bound = target;
    bound.sin_port = 0;
    socklen_t length = sizeof bound;
    if (listener < 0 || bind(listener, reinterpret_cast<sockaddr*>(&bound), sizeof bound) != 0 ||
        listen(listener, 1) != 0 || getsockname(listener, reinterpret_cast<sockaddr*>(&bound), &length) != 0) {
      fail(1);
    }
    if (setns(from_fd, CLONE_NEWNET) != 0) fail(2);
    int connector = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (connector < 0) fail(3);
    if (connect(connector, reinterpret_cast<sockaddr*>(&bound), sizeof bound) != 0) {
      if (errno != EINPROGRESS || !wait_for(connector, POLLOUT, step_ms)) fail(3);
      int error = 0;
      socklen_t error_length = sizeof error;
      getsockopt(connector, SOL_SOCKET, SO_ERROR, &error, &error_length);
      if (error != 0) {
        errno = error;
        fail(3);
      }
    }
    if (!wait_for(listener, POLLIN, step_ms)) fail(4);
    int accepted = accept(listener, nullptr, nullptr);
    if (accepted < 0) fail(4);
    char byte = 'd';
    if (write(connector, &byte, 1) != 1) fail(5);
    char got = 0;
    if (!wait_for(accepted, POLLIN, step_ms) || read(accepted, &got, 1) != 1 || write(accepted, &got, 1) != 1) {
      fail(6);
    }
    got = 0;
    if (!wait_for(connector, POLLIN, step_ms) || read(connector, &got, 1) != 1) fail(7);
    if (got != byte) fail(8);
    _exit(0);
  }
  close(fds[1]);
  close(from_fd);
  close(to_fd);

  TcpFailure failure{-1, 0};
  std::size_t received = 0;
  // Four waits at most in the child, each bounded by the limit; past that it is stuck and killed.
  if (wait_for(fds[0], POLLIN, step_ms * 4 + 1000)) {
    ssize_t got = read(fds[0], &failure, sizeof failure);
    received = got > 0 ? static_cast<std::size_t>(got) : 0;
  }
  close(fds[0]);
  int status = 0;
  pid_t reaped = waitpid(child, &status, WNOHANG);
  if (reaped == 0) {
    // The pipe closed (or the wait ran out): give the child a moment to exit, then end it.
    auto deadline = std::chrono::steady_clock::now() + 1s;
    while ((reaped = waitpid(child, &status, WNOHANG)) == 0 && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(1ms);
    }
    if (reaped == 0) {
      kill(child, SIGKILL);
      waitpid(child, &status, 0);
      return "TCP check " + address(to) + " stuck past its time limit";
    }
  }
  if (received == sizeof failure && failure.step >= 0 && failure.step < tcp_step_count) {
    return "TCP " + route + ": " + tcp_steps[failure.step] + ": " + std::strerror(failure.error);
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return "TCP " + route + ": checker died";
  return "";
}

}  // namespace daqx::test
