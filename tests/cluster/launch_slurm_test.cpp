// daqx-launch through a real Slurm on a simulated cluster: slurmctld, munge and one slurmd per host (each in its
// host's namespace, with its own node name). The launcher runs inside an allocation (salloc, or the batch script
// it writes) and starts the 2x2 event builder as the tasks of one srun step, each on the node of its host.
#include <catch2/catch.hpp>

#include <chrono>
#include <fstream>
#include <set>
#include <thread>

#include "../support/cluster_evb.hpp"
#include "../support/executive_process.hpp"
#include "../support/launcher_process.hpp"
#include "../support/netns.hpp"
#include "../support/process.hpp"
#include "../support/slurm_cluster.hpp"

using namespace daqx::test;
using namespace std::chrono_literals;

namespace {

// salloc for the whole cluster, the launcher as its command.
std::vector<std::string> allocation_of() {
  return {slurm_program("salloc"), "--nodes=" + std::to_string(kClusterEvbHosts), "--job-name=daqx-test", "--"};
}

// The cluster event builder, launched through Slurm.
std::string slurm_evb_partition(const VirtualCluster& cluster, const std::string& name) {
  return cluster_evb_partition(cluster, name, [](PartitionBuilder& partition) { launch_through(partition, "slurm"); });
}

}  // namespace

TEST_CASE("daqx-launch --engine slurm inside an allocation runs the 2x2 event builder as tasks of one srun step, "
          "each on its host's node, checks every event and stops it", "[cluster][slurm][launch]") {
  skip_test_unless_netns_available();
  skip_test_unless_slurm_available();
  VirtualCluster cluster(kClusterEvbHosts);
  SlurmCluster slurm(cluster);
  const std::string partition = slurm_evb_partition(cluster, "evb-slurm");
  const std::string logs = scratch_directory() + "/slurm-logs";
  LauncherProcess launcher({"--config", partition, "--drive", "--run", "60", "--log-dir", logs}, slurm.environment(),
                           allocation_of());
  // While it runs: one step of the job holds every context (srun --multi-prog), named daqx; it follows the plan's
  // one-task steps that asked each node for its limits, which have ended.
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  while (!(application_metric(cluster.url(0, kClusterEvbControlPort), kClusterEvm, "events_completed") > 2000) &&
         launcher.running() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(200ms);
  const ProcessResult steps = slurm.run({"squeue", "--steps", "--noheader", "--format=%i %j %N"});
  INFO("steps:\n" << steps.output);
  CHECK_THAT(steps.output, Catch::Contains(" daqx "));
  launcher.end_run();  // the run has built what check_undisturbed_run asks for: its --run is only a bound
  const std::optional<int> exit_code = launcher.wait(120s);
  const std::string output = launcher.output();
  INFO(output << "\nSlurm:\n" << slurm.log_tails(10));
  REQUIRE(exit_code.has_value());
  CHECK(*exit_code == 0);
  CHECK_THAT(output, Catch::Contains("5 contexts of partition 'evb-slurm' up through slurm"));
  CHECK_THAT(output, Catch::Contains("all contexts stopped cleanly"));
  check_undisturbed_run(launcher);
  for (int h = 0; h < kClusterEvbHosts; ++h) {
    const std::string log = read_text(cluster_evb_log(cluster, logs, h));
    INFO("host " << h << " log:\n" << log);
    // Its output came back through srun, its label taken off, into its own file.
    CHECK_THAT(log, Catch::Contains("ready (pid "));
    CHECK_THAT(log, Catch::Contains(cluster.url(h, kClusterEvbControlPort)));
    CHECK(executives_on(cluster, h).empty());
  }
}

TEST_CASE("Supervision through Slurm: a BU killed with SIGKILL comes back as a step of its own and is readmitted",
          "[cluster][slurm][launch][supervision]") {
  skip_test_unless_netns_available();
  skip_test_unless_slurm_available();
  VirtualCluster cluster(kClusterEvbHosts);
  SlurmCluster slurm(cluster);
  const std::string partition = cluster_evb_partition(cluster, "evb-slurm-supervised", [](PartitionBuilder& built) {
    launch_through(built, "slurm")
        .launch_restart({"http://*:" + std::to_string(kClusterEvbControlPort), "on-failure", "2", "0.5", ""});
  });
  const std::string logs = scratch_directory() + "/slurm-supervised-logs";
  LauncherProcess launcher({"--config", partition, "--drive", "--run", "120", "--log-dir", logs}, slurm.environment(),
                           allocation_of());
  check_bu_killed_and_readmitted(launcher, cluster, logs);
}

TEST_CASE("Placed by Slurm: the partition's hosts become the allocation's nodes, rewritten and reported",
          "[cluster][slurm][launch]") {
  skip_test_unless_netns_available();
  skip_test_unless_slurm_available();
  VirtualCluster cluster(kClusterEvbHosts);
  SlurmCluster slurm(cluster);
  // Hosts that exist nowhere: Slurm's nodes take their place, in order.
  std::string partition_text = read_text(slurm_evb_partition(cluster, "evb-slurm-placed"));
  for (int h = 0; h < kClusterEvbHosts; ++h) {
    const std::string address = cluster.address(h), name = "daq-unit-" + std::to_string(h);
    for (std::size_t at; (at = partition_text.find("\"" + address + "\"")) != std::string::npos ||
                         (at = partition_text.find("//" + address + ":")) != std::string::npos;) {
      const std::size_t begin = partition_text.find(address, at);
      partition_text.replace(begin, address.size(), name);
    }
  }
  const std::string partition = scratch_directory() + "/evb-slurm-placed-names.xml";
  std::ofstream(partition) << partition_text;
  const std::string logs = scratch_directory() + "/slurm-placed-logs";
  LauncherProcess launcher({"--config", partition, "--slurm-placement", "slurm", "--drive", "--run", "6", "--log-dir", logs},
                           slurm.environment(), allocation_of());
  const std::optional<int> exit_code = launcher.wait(120s);
  const std::string output = launcher.output();
  INFO(output);
  REQUIRE(exit_code.has_value());
  CHECK(*exit_code == 0);
  // Every host named in the partition went to a node of its own (in the partition's order: BUs, RUs, EvM).
  std::set<std::string> nodes;
  for (int h = 0; h < kClusterEvbHosts; ++h) {
    const std::string line = "host daq-unit-" + std::to_string(h) + " -> node ";
    const std::size_t at = output.find(line);
    REQUIRE(at != std::string::npos);
    const std::string node = output.substr(at + line.size(), output.find(' ', at + line.size()) - at - line.size());
    const int node_host = slurm.host_of(node);
    REQUIRE(node_host >= 0);
    CHECK_THAT(output, Catch::Contains(line + node + " (" + cluster.address(node_host) + ")"));
    nodes.insert(node);
  }
  CHECK(nodes.size() == static_cast<std::size_t>(kClusterEvbHosts));
  const std::string placed = read_text(logs + "/partition-placed.xml");
  CHECK_THAT(placed, Catch::Contains("url=\"" + cluster.url(3, kClusterEvbControlPort) + "\""));
  CHECK(placed.find("daq-unit-") == std::string::npos);
  check_undisturbed_run(launcher);
}

TEST_CASE("Outside an allocation daqx-launch writes the batch script that runs the partition, and sbatch runs it",
          "[cluster][slurm][launch]") {
  skip_test_unless_netns_available();
  skip_test_unless_slurm_available();
  VirtualCluster cluster(kClusterEvbHosts);
  SlurmCluster slurm(cluster);
  const std::string partition = slurm_evb_partition(cluster, "evb-sbatch");
  const std::string script = scratch_directory() + "/evb.sbatch";
  const std::string logs = scratch_directory() + "/sbatch-logs";
  const std::string job_output = scratch_directory() + "/sbatch.out";
  const ProcessResult written = run_process({tool_program("daqx-launch"), "--config", partition, "--write-sbatch", script,
                                             "--sbatch-option", "--output=" + job_output, "--sbatch-option", "--time=5",
                                             "--", "--drive", "--run", "5", "--log-dir", logs},
                                            10s);
  INFO(written.output);
  REQUIRE(written.exit_code == 0);
  const std::string text = read_text(script);
  INFO(text);
  CHECK_THAT(text, Catch::Contains("#SBATCH --nodes=5"));
  CHECK_THAT(text, Catch::Contains("#SBATCH --ntasks-per-node=1"));
  CHECK_THAT(text, Catch::Contains("--engine slurm"));
  const ProcessResult submitted = slurm.run({"sbatch", "--parsable", script});
  INFO(submitted.output);
  REQUIRE(submitted.exit_code == 0);
  const std::string job = submitted.output.substr(0, submitted.output.find_first_of(";\n"));
  std::string state;
  const auto deadline = std::chrono::steady_clock::now() + 120s;
  while (std::chrono::steady_clock::now() < deadline) {
    const ProcessResult shown = slurm.run({"scontrol", "-o", "show", "job", job});
    const std::size_t at = shown.output.find("JobState=");
    state = at == std::string::npos ? "" : shown.output.substr(at + 9, shown.output.find(' ', at) - at - 9);
    if (state != "PENDING" && state != "RUNNING" && state != "CONFIGURING" && state != "COMPLETING") break;
    std::this_thread::sleep_for(500ms);
  }
  const std::string output = read_text(job_output);
  INFO("job " << job << " " << state << ", its output:\n" << output);
  CHECK(state == "COMPLETED");
  CHECK_THAT(output, Catch::Contains("up through slurm"));
  CHECK_THAT(output, Catch::Contains("all contexts stopped cleanly"));
  for (int h = 0; h < kClusterEvbHosts; ++h) CHECK(executives_on(cluster, h).empty());
}

TEST_CASE("When the allocation ends under it (scancel), daqx-launch stops the partition, restarts nothing and "
          "leaves no process behind", "[cluster][slurm][launch]") {
  skip_test_unless_netns_available();
  skip_test_unless_slurm_available();
  VirtualCluster cluster(kClusterEvbHosts);
  SlurmCluster slurm(cluster);
  // Every context would be restarted if it merely died: the allocation's end must be told apart.
  const std::string partition = cluster_evb_partition(cluster, "evb-slurm-cancelled", [](PartitionBuilder& built) {
    launch_through(built, "slurm").launch_restart({"*", "on-failure", "", "0.2", ""});
  });
  const std::string logs = scratch_directory() + "/slurm-cancelled-logs";
  LauncherProcess launcher({"--config", partition, "--drive", "--log-dir", logs}, slurm.environment(), allocation_of());
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  while (!(application_metric(cluster.url(0, kClusterEvbControlPort), kClusterEvm, "events_completed") > 100) &&
         launcher.running() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(200ms);
  REQUIRE(application_metric(cluster.url(0, kClusterEvbControlPort), kClusterEvm, "events_completed") > 100);
  const ProcessResult jobs = slurm.run({"squeue", "--noheader", "--format=%i"});
  const std::string job = jobs.output.substr(0, jobs.output.find_first_of(" \n"));
  REQUIRE_FALSE(job.empty());
  REQUIRE(slurm.run({"scancel", job}).exit_code == 0);
  const std::optional<int> exit_code = launcher.wait(60s);
  const std::string output = launcher.output();
  INFO(output);
  REQUIRE(exit_code.has_value());
  CHECK(*exit_code == 1);  // the run did not end as asked
  CHECK_THAT(output, Catch::Contains("daqx-launch: allocation " + job + " has ended"));
  CHECK_THAT(output, Catch::Contains("daqx-launch: restarts: 0"));
  CHECK_THAT(output, Catch::Contains("all contexts stopped"));
  for (int h = 0; h < kClusterEvbHosts; ++h) CHECK(executives_on(cluster, h).empty());
}
