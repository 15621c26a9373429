// daqx-launch over OpenSSH on a simulated cluster: every host runs a real sshd, the launcher reaches them with
// a key made for the test and starts, drives, supervises and stops a 2 RU x 2 BU event builder across them.
#include <catch2/catch.hpp>

#include <signal.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "../support/cluster_evb.hpp"
#include "../support/executive_process.hpp"
#include "../support/launcher_process.hpp"
#include "../support/netns.hpp"
#include "../support/process.hpp"
#include "../support/ssh_hosts.hpp"

using namespace daqx::test;
using namespace std::chrono_literals;

namespace {

constexpr std::uint16_t kControl = kClusterEvbControlPort;
constexpr int kHosts = kClusterEvbHosts;

double metric_at(const std::string& url, std::uint32_t tid, const std::string& name) {
  return application_metric(url, tid, name);
}

// The cluster event builder, launched over ssh.
std::string evb_partition(const VirtualCluster& cluster, const std::string& name) {
  return cluster_evb_partition(cluster, name, [](PartitionBuilder& partition) { launch_through(partition, "ssh"); });
}

}  // namespace

TEST_CASE("daqx-launch --engine ssh runs a 2x2 event builder across sshd hosts, checks every event, stops it "
          "and leaves no process behind", "[cluster][ssh][launch]") {
  skip_test_unless_netns_available();
  skip_test_unless_ssh_available();
  VirtualCluster cluster(kHosts);
  SshHosts ssh(cluster);
  // Guarded control ports: changes need the token, which the launcher presents to every remote context. The
  // path is relative to the partition: the copy sent to the hosts names it absolutely.
  const std::string token = scratch_directory() + "/evb-ssh.token";
  std::ofstream(token) << "ssh-test-token-0123456789\n";
  std::filesystem::permissions(token, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write,
                               std::filesystem::perm_options::replace);
  ControlSettings guarded;
  guarded.token_file = "evb-ssh.token";
  const std::string partition = cluster_evb_partition(cluster, "evb-ssh", [&](PartitionBuilder& built) {
    launch_through(built.control(guarded), "ssh");
  });
  const std::string logs = scratch_directory() + "/ssh-logs";
  LauncherProcess launcher({"--config", partition, "--ssh-config", ssh.client_config_path(), "--drive", "--run", "60",
                            "--log-dir", logs});
  // Progress, not time: once the EvM has seen what check_undisturbed_run asks for, the run ends (--run is a bound).
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  while (!(metric_at(cluster.url(0, kControl), 10, "events_completed") > 2000) && launcher.running() &&
         std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(200ms);
  launcher.end_run();
  const std::optional<int> exit_code = launcher.wait(120s);
  const std::string output = launcher.output();
  INFO(output);
  REQUIRE(exit_code.has_value());
  CHECK(*exit_code == 0);
  CHECK_THAT(output, Catch::Contains("5 contexts of partition 'evb-ssh' up through ssh"));
  CHECK_THAT(output, Catch::Contains("all contexts stopped cleanly"));
  check_undisturbed_run(launcher);
  // Each context's output came back over its session into the local log folder, the remote pid first.
  for (int h = 0; h < kHosts; ++h) {
    const std::string log = read_text(logs + "/" + cluster.address(h) + "_" + std::to_string(kControl) + ".log");
    INFO("host " << h << " log:\n" << log);
    CHECK_THAT(log, Catch::Contains("daqx-launch: remote pid "));
    CHECK_THAT(log, Catch::Contains("ready"));
    CHECK_THAT(log, Catch::Contains("token for changes"));
    CHECK(executives_on(cluster, h).empty());
  }
}

TEST_CASE("daqx-launch --engine ssh names a host whose sshd is down and fails cleanly, starting nothing",
          "[cluster][ssh][launch]") {
  skip_test_unless_netns_available();
  skip_test_unless_ssh_available();
  VirtualCluster cluster(kHosts);
  SshHosts ssh(cluster);
  ssh.stop_host(3);
  const std::string partition = evb_partition(cluster, "evb-ssh-down");
  LauncherProcess launcher({"--config", partition, "--ssh-config", ssh.client_config_path(), "--drive", "--run", "5",
                            "--log-dir", scratch_directory() + "/ssh-down-logs"});
  const std::optional<int> exit_code = launcher.wait(60s);
  const std::string output = launcher.output();
  INFO(output);
  REQUIRE(exit_code.has_value());
  CHECK(*exit_code == 1);
  CHECK_THAT(output, Catch::Contains("host " + cluster.address(3)));
  CHECK_THAT(output, Catch::Contains("Connection refused"));
  for (int h = 0; h < kHosts; ++h) CHECK(executives_on(cluster, h).empty());
}

TEST_CASE("Supervision over ssh: a BU executive killed with SIGKILL is restarted by the launcher and taken back "
          "into the running event builder, and built + lost + incomplete = assigned", "[cluster][ssh][launch][supervision]") {
  skip_test_unless_netns_available();
  skip_test_unless_ssh_available();
  VirtualCluster cluster(kHosts);
  SshHosts ssh(cluster);
  const std::string partition = cluster_evb_partition(cluster, "evb-ssh-supervised", [&](PartitionBuilder& built) {
    launch_through(built, "ssh").launch_restart({cluster.url(4, kControl), "on-failure", "3", "0.5", ""});
  });
  const std::string logs = scratch_directory() + "/ssh-supervised-logs";
  LauncherProcess launcher({"--config", partition, "--ssh-config", ssh.client_config_path(), "--drive", "--run", "120",
                            "--log-dir", logs});
  check_bu_killed_and_readmitted(launcher, cluster, logs);
}

TEST_CASE("Executives started over ssh stop by themselves when the launcher is killed (their session ends)",
          "[cluster][ssh][launch]") {
  skip_test_unless_netns_available();
  skip_test_unless_ssh_available();
  VirtualCluster cluster(kHosts);
  SshHosts ssh(cluster);
  const std::string partition = evb_partition(cluster, "evb-ssh-orphans");
  LauncherProcess launcher({"--config", partition, "--ssh-config", ssh.client_config_path(), "--drive", "--log-dir",
                            scratch_directory() + "/ssh-orphan-logs"});
  const std::string evm_url = cluster.url(0, kControl);
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  while (!(metric_at(evm_url, 10, "events_completed") > 100) && launcher.running() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(200ms);
  INFO(launcher.output());
  REQUIRE(metric_at(evm_url, 10, "events_completed") > 100);
  // daqxctl drives the remote contexts as it does local ones: by their URLs in the partition.
  const ProcessResult status = run_process({tool_program("daqxctl"), "--config", partition, "status"}, 30s);
  INFO(status.output);
  CHECK(status.exit_code == 0);
  CHECK_THAT(status.output, Catch::Contains(cluster.url(4, kControl)));
  CHECK_THAT(status.output, Catch::Contains("Enabled"));
  launcher.signal(SIGKILL);  // no orderly stop: only the end of each ssh session tells the executives
  launcher.wait(10s);
  const auto gone_by = std::chrono::steady_clock::now() + 30s;
  auto left = [&] {
    std::size_t count = 0;
    for (int h = 0; h < kHosts; ++h) count += executives_on(cluster, h).size();
    return count;
  };
  while (left() != 0 && std::chrono::steady_clock::now() < gone_by) std::this_thread::sleep_for(200ms);
  for (int h = 0; h < kHosts; ++h) {
    INFO("host " << h);
    CHECK(executives_on(cluster, h).empty());
  }
}
