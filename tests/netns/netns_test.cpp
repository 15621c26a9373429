// The network-namespace cluster harness: hosts get their own addresses, reach each other and nothing beyond,
// carry real executives, and leave nothing behind. Skipped (exit code 77) where namespaces are unavailable.
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>
#include <thread>
#include <vector>

#include "../support/executive_process.hpp"
#include "../support/netns.hpp"
#include "../support/partition_builder.hpp"
#include "../support/process.hpp"

using namespace daqx::test;
using Catch::Contains;
using namespace std::chrono_literals;

namespace {

ProcessResult ip(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {ip_program()};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_process(argv, 10s);
}

bool listed(const std::string& listing, const std::string& name) {
  // Names are followed by a space, "@", ":" or a line end in `ip netns list` and `ip -o link show`.
  for (std::size_t at = listing.find(name); at != std::string::npos; at = listing.find(name, at + 1)) {
    char after = at + name.size() < listing.size() ? listing[at + name.size()] : '\n';
    char before = at == 0 ? '\n' : listing[at - 1];
    if ((after == ' ' || after == '@' || after == ':' || after == '\n') && (before == ' ' || before == '\n')) {
      return true;
    }
  }
  return false;
}

bool namespace_exists(const std::string& name) { return listed(ip({"netns", "list"}).output, name); }
bool link_exists(const std::string& name) { return listed(ip({"-o", "link", "show"}).output, name); }

}  // namespace

TEST_CASE("each host of a 3-host cluster has its own address on eth0 and loopback up", "[netns]") {
  skip_test_unless_netns_available();
  VirtualCluster cluster(3);
  REQUIRE(cluster.size() == 3);
  for (int host = 0; host < 3; ++host) {
    INFO("host " << host << " in " << cluster.namespace_name(host));
    ProcessResult addresses = cluster.run(host, {"ip", "-o", "-4", "addr", "show"});
    REQUIRE(addresses.exit_code == 0);
    CHECK_THAT(addresses.output, Contains("eth0    inet " + cluster.address(host) + "/24"));
    CHECK_THAT(addresses.output, Contains("lo    inet 127.0.0.1/8"));
    ProcessResult loopback = cluster.run(host, {"ip", "-o", "link", "show", "lo"});
    CHECK_THAT(loopback.output, Contains("UP"));
    CHECK_THAT(loopback.output, Contains("LOWER_UP"));
    CHECK_THAT(cluster.run(host, {"ip", "-o", "link", "show", "eth0"}).output, Contains("mtu 1500"));
  }
  CHECK(cluster.address(0) != cluster.address(1));
  CHECK(cluster.address(1) != cluster.address(2));
}

TEST_CASE("host 0 of a 3-host cluster reaches hosts 1 and 2 over TCP", "[netns]") {
  skip_test_unless_netns_available();
  VirtualCluster cluster(3);
  CHECK(cluster.check_tcp(0, 1) == "");
  CHECK(cluster.check_tcp(0, 2) == "");
  CHECK(cluster.check_tcp(2, 0) == "");
}

TEST_CASE("the test's own namespace reaches every host, and every host reaches it", "[netns]") {
  skip_test_unless_netns_available();
  VirtualCluster cluster(3);
  for (int host = 0; host < 3; ++host) {
    CHECK(cluster.check_tcp(VirtualCluster::root, host) == "");
    CHECK(cluster.check_tcp(host, VirtualCluster::root) == "");
  }
}

TEST_CASE("a host has a route to its cluster's subnet and to nothing else", "[netns]") {
  skip_test_unless_netns_available();
  VirtualCluster cluster(2);
  ProcessResult routes = cluster.run(0, {"ip", "-4", "route", "show", "table", "all"});
  INFO(routes.output);
  CHECK_THAT(routes.output, !Contains("default"));
  CHECK_THAT(routes.output, Contains(cluster.subnet()));
  // The kernel answers "Network is unreachable" without sending anything.
  for (const char* outside : {"192.0.2.1", "8.8.8.8", "10.0.0.1"}) {
    ProcessResult route = cluster.run(0, {"ip", "route", "get", outside});
    INFO(outside << ": " << route.output);
    CHECK(route.exit_code != 0);
    CHECK_THAT(route.output, Contains("unreachable"));
  }
}

TEST_CASE("a removed cluster leaves no namespace, veth or bridge behind", "[netns]") {
  skip_test_unless_netns_available();
  std::vector<std::string> namespaces;
  std::vector<std::string> links;
  std::string bridge;
  {
    VirtualCluster cluster(3);
    bridge = cluster.bridge_name();
    for (int host = 0; host < 3; ++host) {
      namespaces.push_back(cluster.namespace_name(host));
      links.push_back(cluster.link_name(host));
    }
    // Listed while alive, so the checks below cannot pass by looking for the wrong names.
    REQUIRE(link_exists(bridge));
    for (const std::string& name : namespaces) REQUIRE(namespace_exists(name));
    for (const std::string& name : links) REQUIRE(link_exists(name));
  }
  CHECK_FALSE(link_exists(bridge));
  for (const std::string& name : namespaces) CHECK_FALSE(namespace_exists(name));
  for (const std::string& name : links) CHECK_FALSE(link_exists(name));
}

TEST_CASE("a cluster is removed when the test using it throws", "[netns]") {
  skip_test_unless_netns_available();
  std::string bridge;
  std::string first_namespace;
  try {
    VirtualCluster cluster(2);
    bridge = cluster.bridge_name();
    first_namespace = cluster.namespace_name(0);
    throw std::runtime_error("a failing test");
  } catch (const std::runtime_error&) {
  }
  CHECK_FALSE(link_exists(bridge));
  CHECK_FALSE(namespace_exists(first_namespace));
}

TEST_CASE("two clusters at once have different subnets and names and cannot reach each other", "[netns]") {
  skip_test_unless_netns_available();
  VirtualCluster first(2);
  VirtualCluster second(2);
  CHECK(first.subnet() != second.subnet());
  CHECK(first.bridge_name() != second.bridge_name());
  CHECK(first.namespace_name(0) != second.namespace_name(0));
  CHECK(first.check_tcp(0, 1) == "");
  CHECK(second.check_tcp(0, 1) == "");
  CHECK(first.check_tcp(VirtualCluster::root, 1) == "");
  CHECK(second.check_tcp(VirtualCluster::root, 1) == "");
  // A host knows no way into the other cluster's subnet.
  ProcessResult across = first.run(0, {"ip", "route", "get", second.address(1)});
  INFO(across.output);
  CHECK(across.exit_code != 0);
  CHECK_THAT(across.output, Contains("unreachable"));
}

TEST_CASE("an executive inside a namespace answers on its control URL from the root namespace and stops on SIGTERM",
          "[netns]") {
  skip_test_unless_netns_available();
  VirtualCluster cluster(2);
  std::uint16_t port = free_port();  // any port is free inside a fresh namespace; this one is merely plausible
  PartitionBuilder one("netns-one");
  one.context(cluster.url(1, port)).module("libdaqx_nton.so").application("nton::Receiver", 21, 0);
  std::string partition = write_file("netns-one-context.xml", one.xml());
  std::unique_ptr<ExecutiveProcess> executive = cluster.start_executive(1, partition, port);
  bool ready = executive->wait_ready();
  INFO(executive->output());
  REQUIRE(ready);
  CHECK(executive->get("/api/executive").status == 200);
  CHECK(executive->application(21) != nullptr);

  // The pid is the executive's own, and it lives in host 1's namespace, not the test's.
  struct stat in_process {};
  struct stat of_host {};
  REQUIRE(stat(("/proc/" + std::to_string(executive->pid()) + "/ns/net").c_str(), &in_process) == 0);
  REQUIRE(stat(("/var/run/netns/" + cluster.namespace_name(1)).c_str(), &of_host) == 0);
  CHECK(in_process.st_ino == of_host.st_ino);

  CHECK(executive->stop() == 0);
  CHECK_THAT(executive->output(), Contains("stopping"));
}

TEST_CASE("leftovers of a dead test program are removed by the stale cleanup", "[netns]") {
  skip_test_unless_netns_available();
  pid_t dead = fork();
  if (dead == 0) _exit(0);
  REQUIRE(dead > 0);
  waitpid(dead, nullptr, 0);
  std::string prefix = "dqx" + std::to_string(dead) + "c0";
  REQUIRE(ip({"link", "add", prefix, "type", "bridge"}).exit_code == 0);
  REQUIRE(ip({"netns", "add", prefix + "h0"}).exit_code == 0);
  REQUIRE(ip({"link", "add", prefix + "h0", "type", "veth", "peer", "name", "eth0", "netns", prefix + "h0"})
              .exit_code == 0);

  std::vector<std::string> removed = remove_stale_netns_objects();
  INFO(removed.size() << " removed");
  CHECK_FALSE(link_exists(prefix));
  CHECK_FALSE(link_exists(prefix + "h0"));
  CHECK_FALSE(namespace_exists(prefix + "h0"));
}

TEST_CASE("a test program killed with SIGKILL has its cluster removed by the watchdog", "[netns]") {
  skip_test_unless_netns_available();
  int names[2];
  REQUIRE(pipe(names) == 0);
  pid_t victim = fork();
  REQUIRE(victim >= 0);
  if (victim == 0) {
    // A copy of this program that makes a cluster and waits to be killed: never back into the test framework.
    try {
      close(names[0]);
      VirtualCluster cluster(2);
      std::string line = cluster.bridge_name() + "\n";
      if (write(names[1], line.data(), line.size()) < 0) _exit(1);
      for (;;) pause();
    } catch (...) {
      _exit(1);
    }
  }
  close(names[1]);
  std::string bridge;
  char byte = 0;
  while (read(names[0], &byte, 1) == 1 && byte != '\n') bridge += byte;
  close(names[0]);
  kill(victim, SIGKILL);
  waitpid(victim, nullptr, 0);
  REQUIRE(bridge.rfind("dqx" + std::to_string(victim) + "c", 0) == 0);

  auto deadline = std::chrono::steady_clock::now() + 20s;
  // The watchdog removes the hosts one after the other: wait for all of them, not only the first.
  auto leftovers = [&] {
    return link_exists(bridge) || namespace_exists(bridge + "h0") || namespace_exists(bridge + "h1") ||
           link_exists(bridge + "h1");
  };
  while (leftovers() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(100ms);
  }
  CHECK_FALSE(link_exists(bridge));
  CHECK_FALSE(namespace_exists(bridge + "h0"));
  CHECK_FALSE(namespace_exists(bridge + "h1"));
  CHECK_FALSE(link_exists(bridge + "h1"));
}

TEST_CASE("without root a namespace test exits with the skip code and says why, and fails where namespaces are required", "[netns]") {
  skip_test_unless_netns_available();  // only root can drop to another user here
  std::string some_test = "each host of a 3-host cluster has its own address on eth0 and loopback up";
  // CI sets DAQX_NETNS_REQUIRE=1 for this very program; the child must see the environment of a
  // developer's machine (no requirement) to show the skip, and CI's to show the failure.
  auto run_unprivileged = [&](const std::string& require) {
    return run_process({"/usr/bin/env", "-u", "DAQX_NETNS_REQUIRE", "DAQX_NETNS_REQUIRE=" + require, "/usr/bin/setpriv",
                        "--reuid=65534", "--regid=65534", "--clear-groups", program_directory() + "/netns_test",
                        some_test},
                       30s);
  };
  ProcessResult skipped = run_unprivileged("");
  INFO(skipped.output);
  CHECK(skipped.exit_code == netns_skip_exit_code);
  CHECK_THAT(skipped.output, Contains("SKIPPED: network namespaces unavailable: not root"));

  ProcessResult required = run_unprivileged("1");
  INFO(required.output);
  CHECK(required.exit_code != 0);
  CHECK(required.exit_code != netns_skip_exit_code);
  CHECK_THAT(required.output, Contains("network namespaces unavailable: not root"));
}

TEST_CASE("the TCP check names the step that failed when a host's link is down", "[netns]") {
  skip_test_unless_netns_available();
  VirtualCluster cluster(2);
  REQUIRE(cluster.run(1, {"ip", "link", "set", "eth0", "down"}).exit_code == 0);
  std::string failure = cluster.check_tcp(0, 1, 1500ms);
  INFO(failure);
  CHECK_THAT(failure, Contains("TCP " + cluster.address(0) + " -> " + cluster.address(1) + ": connect"));
}
