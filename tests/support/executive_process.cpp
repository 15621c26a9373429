// Starting, driving and stopping real executive processes for process-level tests.
#include "executive_process.hpp"

#include "process.hpp"

#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <Poco/JSON/Parser.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <ctime>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <mutex>
#include <random>
#include <set>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace daqx::test {

std::string executive_program() { return DAQX_TEST_EXECUTIVE; }
std::string tool_program(const std::string& name) { return std::string(DAQX_TEST_TOOLS_DIR) + "/" + name; }
std::string module_directory() { return DAQX_TEST_MODULE_DIR; }
std::string config_directory() { return DAQX_TEST_CONFIG_DIR; }

namespace {

// Whether a port is free for every kind of endpoint a test may give it: a TCP socket on loopback, and ptshm's
// abstract socket for 127.0.0.1 (named as pt/ptshm/src/wire.cpp names it), which a TCP bind does not see: two
// test programs at once could otherwise give the same number to a TCP endpoint and a shared-memory one, or two
// shared-memory ones.
bool port_free(std::uint16_t port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = htons(port);
  const bool tcp_free = bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0;
  close(fd);
  if (!tcp_free) return false;
  const std::string name = "daqx-shm/127.0.0.1:" + std::to_string(port);
  sockaddr_un shm{};
  shm.sun_family = AF_UNIX;
  std::memcpy(shm.sun_path + 1, name.data(), name.size());  // abstract: sun_path starts with a 0 byte
  fd = socket(AF_UNIX, SOCK_SEQPACKET, 0);  // as ptshm listens: a name is taken per socket type
  const auto length = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
  const bool shm_free = bind(fd, reinterpret_cast<sockaddr*>(&shm), length) == 0;
  close(fd);
  return shm_free;
}

// Claims a port among every test program running on this machine at once: a lock on the port's byte of one shared
// file, held by an open file description of this process until it exits (the kernel drops it then, however the
// process ends). Without it two programs (ctest -j2) could each find a port free and each give it to an executive
// that binds it later: one of the two executives then fails with "Address already in use".
bool claim_port(std::uint16_t port) {
  // Opened once per process: a forked child that picks ports claims them for itself, not through its parent's
  // description (a lock there would be its parent's, and exclude nothing between the two).
  static int claims = -1;
  static pid_t owner = 0;
  if (owner != getpid()) {
    if (claims >= 0) close(claims);  // the parent's claims stay: the parent holds the description too
    claims = open("/tmp/daqx-test-ports.lock", O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    if (claims >= 0) fchmod(claims, 0666);  // whoever runs the next test program may claim too
    owner = getpid();
  }
  if (claims < 0) return true;  // nowhere to coordinate: the check that the port is free still holds
  struct flock lock {};
  lock.l_type = F_WRLCK;
  lock.l_whence = SEEK_SET;
  lock.l_start = port;
  lock.l_len = 1;
  return fcntl(claims, F_OFD_SETLK, &lock) == 0;
}

}  // namespace

std::uint16_t free_port() {
  // Below the kernel's ephemeral range: a port it may give an outgoing connection as its source (a partition of a
  // hundred executives opens thousands at once) could otherwise be taken before the executive meant to listen on
  // it has started. Chosen at random there, remembered so that two endpoints of one partition never share one,
  // and claimed so that no other test program running at the same time gives it out.
  static std::mutex mutex;
  static std::set<std::uint16_t> given;
  static std::minstd_rand random(static_cast<std::uint32_t>(getpid()) * 7919u + static_cast<std::uint32_t>(time(nullptr)));
  std::lock_guard lock(mutex);
  unsigned ephemeral_low = 32768;
  if (std::FILE* range = std::fopen("/proc/sys/net/ipv4/ip_local_port_range", "r")) {
    if (std::fscanf(range, "%u", &ephemeral_low) != 1) ephemeral_low = 32768;
    std::fclose(range);
  }
  const unsigned low = 10000;
  const unsigned high = std::max(low + 1000, std::min(ephemeral_low, 65536u)) - 1;
  for (;;) {
    const auto port = static_cast<std::uint16_t>(low + random() % (high - low + 1));
    if (given.count(port) != 0) continue;
    if (claim_port(port) && port_free(port) && given.insert(port).second) return port;
  }
}

namespace {
struct Scratch {
  std::string path;
  Scratch() {
    char pattern[] = "/tmp/daqx-test-XXXXXX";
    path = mkdtemp(pattern);
  }
  ~Scratch() {
    std::error_code ignored;
    std::filesystem::remove_all(path, ignored);
  }
};
}  // namespace

std::string scratch_directory() {
  static Scratch scratch;
  return scratch.path;
}

std::string write_file(const std::string& name, const std::string& text) {
  std::string path = scratch_directory() + "/" + name;
  std::ofstream(path) << text;
  return path;
}

ExecutiveProcess::ExecutiveProcess(const std::string& partition_path, const std::string& context_url,
                                   std::vector<std::string> extra_args, const std::string& program,
                                   std::vector<std::string> wrapper)
    : client_(context_url, std::chrono::seconds(10)) {
  static int counter = 0;
  log_path_ = scratch_directory() + "/executive-" + std::to_string(getpid()) + "-" + std::to_string(++counter) + ".log";
  std::vector<std::string> args = std::move(wrapper);
  args.insert(args.end(), {program, "--config", partition_path, "--context", context_url});
  args.insert(args.end(), extra_args.begin(), extra_args.end());
  // The build tree's modules go with the build tree's executive; another one (an installed tree under test)
  // must find its modules on its own, so it gets an empty module path (none).
  const std::string module_path = program == executive_program() ? module_directory() : std::string();
  pid_ = start_process(std::move(args), log_path_, {"DAQX_MODULE_PATH=" + module_path});
}

ExecutiveProcess::~ExecutiveProcess() {
  if (!reaped_ && pid_ > 0) {
    ::kill(pid_, SIGKILL);
    waitpid(pid_, &status_, 0);
  }
}

bool ExecutiveProcess::running() {
  if (reaped_) return false;
  if (waitpid(pid_, &status_, WNOHANG) == pid_) reaped_ = true;
  return !reaped_;
}

bool ExecutiveProcess::wait_ready(std::chrono::milliseconds limit) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (!running()) {
      // What it said on its way out (a port taken, a refusal): a test that did not expect this shows why.
      std::cerr << "executive for " << client_.url() << " exited before it was ready:\n" << output() << std::endl;
      return false;
    }
    if (ControlClient(client_.url(), std::chrono::seconds(1)).get("/api/executive").status == 200) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

HttpReply ExecutiveProcess::transition(const std::string& command) const {
  return post("/api/transition", "{\"command\":\"" + command + "\"}");
}

HttpReply ExecutiveProcess::transition(std::uint32_t tid, const std::string& command) const {
  return post("/api/applications/" + std::to_string(tid) + "/transition", "{\"command\":\"" + command + "\"}");
}

namespace {

// A metric of one application's status (GET /api/applications/TID), NaN when absent.
double metric_in(const HttpReply& reply, const std::string& name) {
  if (reply.status != 200) return std::nan("");
  Poco::JSON::Object::Ptr app = Poco::JSON::Parser().parse(reply.body).extract<Poco::JSON::Object::Ptr>();
  Poco::JSON::Array::Ptr metrics = app->getArray("metrics");
  for (std::size_t i = 0; metrics && i < metrics->size(); ++i) {
    Poco::JSON::Object::Ptr m = metrics->getObject(static_cast<unsigned>(i));
    if (m->getValue<std::string>("name") == name) return m->getValue<double>("value");
  }
  return std::nan("");
}

}  // namespace

double application_metric(const std::string& url, std::uint32_t tid, const std::string& name) {
  return metric_in(ControlClient(url, std::chrono::seconds(5)).get("/api/applications/" + std::to_string(tid)), name);
}

Poco::JSON::Object::Ptr ExecutiveProcess::application(std::uint32_t tid) const {
  HttpReply reply = get("/api/applications/" + std::to_string(tid));
  if (reply.status != 200) return nullptr;
  return Poco::JSON::Parser().parse(reply.body).extract<Poco::JSON::Object::Ptr>();
}

double ExecutiveProcess::metric(std::uint32_t tid, const std::string& name) const {
  return metric_in(get("/api/applications/" + std::to_string(tid)), name);
}

bool ExecutiveProcess::wait_metric(std::uint32_t tid, const std::string& name, double value,
                                   std::chrono::milliseconds limit) const {
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (metric(tid, name) >= value) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

ExecutiveProcess::Progress ExecutiveProcess::wait_progress(std::uint32_t tid, const std::string& name, double target,
                                                           std::chrono::seconds stall) {
  using Clock = std::chrono::steady_clock;
  // However slow the machine, a test must end: an hour is far beyond any run here that still moves.
  constexpr std::chrono::hours kBound{1};
  Progress progress;
  const auto start = Clock::now();
  auto last_growth = start;
  auto next_sample = start;
  double best = -1;
  for (;;) {
    const auto now = Clock::now();
    const double value = metric(tid, name);
    progress.seconds = std::chrono::duration<double>(now - start).count();
    if (!std::isnan(value)) progress.value = value;
    if (now >= next_sample) {
      progress.trace += "t=" + std::to_string(static_cast<long>(progress.seconds)) + "s " +
                        (std::isnan(value) ? std::string("?") : std::to_string(static_cast<long long>(value))) + ", ";
      next_sample = now + std::chrono::seconds(1);
    }
    if (!std::isnan(value) && value >= target) {
      progress.reached = true;
      progress.trace += "reached " + std::to_string(static_cast<long long>(target));
      return progress;
    }
    if (!std::isnan(value) && value > best) {
      best = value;
      last_growth = now;
    }
    std::string ended;
    // How it ended and what it said last: the only trace of a crash when the test's output is cut short.
    if (!running())
      ended = std::string("the executive is gone (").append(wait_status_words(status_)).append("; its last lines:\n")
                  .append(last_lines(output(), 12)).append(")");
    else if (now - last_growth >= stall) ended = "no progress for " + std::to_string(stall.count()) + " s";
    else if (now - start >= kBound) ended = "still moving after an hour";
    if (!ended.empty()) {
      progress.trace += ended + " at " + std::to_string(static_cast<long long>(progress.value)) + " of " +
                        std::to_string(static_cast<long long>(target));
      return progress;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

int ExecutiveProcess::stop(std::chrono::seconds grace) {
  if (running()) {
    ::kill(pid_, SIGTERM);
    auto deadline = std::chrono::steady_clock::now() + grace;
    while (running() && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    if (running()) {
      kill_now();
      return -1;
    }
  }
  if (WIFEXITED(status_)) return WEXITSTATUS(status_);
  if (WIFSIGNALED(status_)) return 128 + WTERMSIG(status_);
  return -1;
}

void ExecutiveProcess::kill_now() {
  if (!running()) return;
  ::kill(pid_, SIGKILL);
  waitpid(pid_, &status_, 0);
  reaped_ = true;
}

std::string ExecutiveProcess::output() const {
  std::ifstream in(log_path_);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace daqx::test
