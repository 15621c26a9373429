#include "cluster_evb.hpp"

#include <catch2/catch.hpp>

#include <signal.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

#include "checked_evb_partition.hpp"
#include "executive_process.hpp"
#include "process.hpp"

namespace daqx::test {

using namespace std::chrono_literals;

std::string cluster_evb_partition(const VirtualCluster& cluster, const std::string& name,
                                  const std::function<void(PartitionBuilder&)>& extend) {
  std::string path;
  REQUIRE_NOTHROW(path = checked_evb_partition(cluster, 2, 2, kClusterEvbControlPort, name));
  PartitionBuilder partition = PartitionBuilder::extending(read_text(path));
  extend(partition);
  std::ofstream(path) << partition.xml();
  return path;
}

PartitionBuilder& launch_through(PartitionBuilder& partition, const std::string& engine) {
  LaunchHostSettings every_host;
  every_host.pattern = "*";
  every_host.environment = {{"DAQX_MODULE_PATH", module_directory()}};
  return partition.launch_engine(engine).launch_host(every_host);
}

std::vector<std::string> executives_on(const VirtualCluster& cluster, int host) {
  std::vector<std::string> found;
  const ProcessResult pids = run_process({ip_program(), "netns", "pids", cluster.namespace_name(host)}, 10s);
  std::istringstream in(pids.output);
  for (std::string pid; in >> pid;) {
    std::string command = read_text("/proc/" + pid + "/cmdline");
    for (char& c : command)
      if (c == '\0') c = ' ';
    if (command.find("daqx-executive") != std::string::npos) found.push_back(pid + ": " + command);
  }
  return found;
}

std::string cluster_evb_log(const VirtualCluster& cluster, const std::string& log_dir, int host) {
  return log_dir + "/" + cluster.address(host) + "_" + std::to_string(kClusterEvbControlPort) + ".log";
}

void check_undisturbed_run(const LauncherProcess& launcher) {
  const double assigned = launcher.summary_counter("evb/evm/0", "events_assigned");
  CHECK(assigned > 1000);
  CHECK(launcher.summary_counter("evb/evm/0", "events_completed") == assigned);
  CHECK(launcher.summary_counter("evb/evm/0", "events_lost") == 0);
  CHECK(launcher.summary_counter("evb/bu/0", "events_built") + launcher.summary_counter("evb/bu/1", "events_built") == assigned);
  for (const char* bu : {"evb/bu/0", "evb/bu/1"}) {
    INFO(bu);
    CHECK(launcher.summary_counter(bu, "events_corrupt") == 0);
    CHECK(launcher.summary_counter(bu, "events_incomplete") == 0);
  }
}

void check_bu_killed_and_readmitted(LauncherProcess& launcher, const VirtualCluster& cluster, const std::string& log_dir) {
  const std::string evm_url = cluster.url(0, kClusterEvbControlPort);
  const std::string bu_url = cluster.url(4, kClusterEvbControlPort);
  auto wait_for = [&](auto condition, std::chrono::seconds limit) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (!condition() && launcher.running() && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(200ms);
    return condition();
  };
  INFO("launcher so far:\n" << launcher.output());
  REQUIRE(wait_for([&] { return application_metric(bu_url, kClusterBu1, "events_built") > 1000; }, 60s));
  const pid_t bu_pid = executive_pid_in_log(cluster_evb_log(cluster, log_dir, 4));
  REQUIRE(bu_pid > 0);
  REQUIRE(kill(bu_pid, SIGKILL) == 0);
  // Restarted by the launcher and admitted again by the EvM: it builds anew.
  CHECK(wait_for([&] { return application_metric(evm_url, kClusterEvm, "bu_readmissions") >= 1; }, 60s));
  CHECK(wait_for([&] { return executive_pid_in_log(cluster_evb_log(cluster, log_dir, 4)) != bu_pid; }, 10s));
  CHECK(wait_for([&] { return application_metric(bu_url, kClusterBu1, "events_built") > 500; }, 60s));
  // Everything asserted below is there now: the run ends here, in order, not when its --run bound expires.
  launcher.end_run();
  const std::optional<int> exit_code = launcher.wait(std::chrono::seconds(120));
  const std::string output = launcher.output();
  INFO(output);
  REQUIRE(exit_code.has_value());
  CHECK(*exit_code == 0);
  CHECK_THAT(output, Catch::Contains("daqx-launch: " + bu_url + " is back on "));
  CHECK_THAT(output, Catch::Contains("daqx-launch: restarts: 1"));
  const double assigned = launcher.summary_counter("evb/evm/0", "events_assigned");
  const double completed = launcher.summary_counter("evb/evm/0", "events_completed");
  const double lost = std::max(0.0, launcher.summary_counter("evb/evm/0", "events_lost"));
  double incomplete = 0;
  for (const char* bu : {"evb/bu/0", "evb/bu/1"}) incomplete += std::max(0.0, launcher.summary_counter(bu, "events_incomplete"));
  INFO("assigned " << assigned << " completed " << completed << " lost " << lost << " incomplete " << incomplete);
  CHECK(assigned > 1000);
  CHECK(lost > 0);
  CHECK(completed + lost + incomplete == assigned);
  CHECK(launcher.summary_counter("evb/evm/0", "bu_drops") >= 1);
  for (int h = 0; h < kClusterEvbHosts; ++h) CHECK(executives_on(cluster, h).empty());
}

}  // namespace daqx::test
