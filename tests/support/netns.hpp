// A small cluster on one machine for tests: one Linux network namespace per host, joined by a private bridge.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "executive_process.hpp"
#include "process.hpp"

namespace daqx::test {

// Path of iproute2's `ip` (PATH, then the sbin directories), or empty when there is none.
std::string ip_program();

// Why network namespaces cannot be used here (not root, no `ip`, creating a namespace, veth or bridge fails),
// or empty when they can. Probed once per program, on first call: listing tests never calls it.
std::string netns_unavailable_reason();

// The exit code ctest is told (SKIP_RETURN_CODE) to report as "skipped": Catch2 v2 has no skip of its own.
inline constexpr int netns_skip_exit_code = 77;

// First line of a test that needs namespaces: returns if they are available, otherwise prints the reason and
// ends the program with netns_skip_exit_code, so the test is reported SKIPPED rather than passed.
void skip_test_unless_netns_available();

// Removes namespaces, bridges and veths named dqx<pid>... whose pid no longer exists (left by a test program
// that was killed), and kills what still runs in those namespaces. Returns the names removed.
std::vector<std::string> remove_stale_netns_objects();

// N hosts, each in its own namespace with lo up and one veth ("eth0") on a bridge in the test's namespace.
// Addresses are 10.233.X.(host+1)/24, X chosen per cluster from the pid and what is free on the machine; the
// test's own namespace is 10.233.X.254 on the bridge, so it reaches every host. No route leaves the /24.
// Everything is removed on destruction, and by a watchdog process if the test program dies.
class VirtualCluster {
 public:
  static constexpr int root = -1;  // the test program's own namespace, where it may stand for a host

  explicit VirtualCluster(int hosts);  // throws std::runtime_error naming the failing command and its output
  ~VirtualCluster();
  VirtualCluster(const VirtualCluster&) = delete;
  VirtualCluster& operator=(const VirtualCluster&) = delete;

  int size() const noexcept { return hosts_; }
  std::string address(int host) const;                       // "10.233.17.1"; root gives "10.233.17.254"
  std::string url(int host, std::uint16_t port) const;       // "http://10.233.17.1:PORT", a context URL
  std::string namespace_name(int host) const;                // "dqx4242c0h1"
  std::string link_name(int host) const;                     // the veth end on the bridge (same name)
  std::string bridge_name() const { return prefix_; }        // "dqx4242c0"
  std::string subnet() const;                                // "10.233.17.0/24"
  std::vector<std::string> exec_prefix(int host) const;      // {"/usr/sbin/ip", "netns", "exec", NAME}

  // Runs argv inside host's namespace (argv[0] is looked up in PATH), killed past `limit`.
  ProcessResult run(int host, const std::vector<std::string>& argv,
                    std::chrono::milliseconds limit = std::chrono::seconds(10)) const;

  // Starts daqx-executive inside host's namespace playing context url(host, port) of the partition.
  std::unique_ptr<ExecutiveProcess> start_executive(int host, const std::string& partition_path, std::uint16_t port,
                                                    std::vector<std::string> extra_args = {}) const;

  // Connects over TCP from one host (or root) to another's address and echoes a byte: empty when that worked,
  // otherwise which step failed and why. Needs no program inside the namespaces.
  std::string check_tcp(int from, int to, std::chrono::milliseconds limit = std::chrono::seconds(5)) const;

 private:
  void check_host(int host) const;
  void remove() noexcept;

  int hosts_ = 0;
  int slot_ = -1;       // this cluster's number among the program's live clusters: part of every name
  int subnet_ = -1;     // X of 10.233.X.0/24
  std::string prefix_;  // dqx<pid>c<slot>
  bool bridge_created_ = false;
  int namespaces_created_ = 0;
  int links_created_ = 0;
};

}  // namespace daqx::test
