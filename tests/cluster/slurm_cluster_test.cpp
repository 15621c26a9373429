// The Slurm harness (support/slurm_cluster.*): slurmctld, munge and one slurmd per simulated host, reached with
// the client commands a launcher uses. Skipped (exit code 77) where namespaces or Slurm are unavailable.
#include <catch2/catch.hpp>

#include <dirent.h>

#include <chrono>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>

#include "../support/netns.hpp"
#include "../support/process.hpp"
#include "../support/slurm_cluster.hpp"

using namespace daqx::test;
using namespace std::chrono_literals;

namespace {

// The lines of srun --label output that task `task` printed, its "N: " prefix removed.
std::string task_output(const std::string& output, int task) {
  const std::string label = std::to_string(task) + ": ";
  std::string lines;
  std::stringstream stream(output);
  std::string line;
  while (std::getline(stream, line)) {
    if (line.rfind(label, 0) == 0) lines += line.substr(label.size()) + "\n";
  }
  return lines;
}

void write_text(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

// Processes whose command line names `text` (a path of the harness's directory: its daemons' arguments).
std::vector<std::string> processes_naming(const std::string& text) {
  std::vector<std::string> found;
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return found;
  while (dirent* entry = readdir(proc)) {
    if (std::atol(entry->d_name) <= 0) continue;
    std::string command_line = read_text(std::string("/proc/") + entry->d_name + "/cmdline");
    for (char& c : command_line) {
      if (c == '\0') c = ' ';
    }
    if (command_line.find(text) != std::string::npos) found.push_back(std::string(entry->d_name) + " " + command_line);
  }
  closedir(proc);
  return found;
}

}  // namespace

TEST_CASE("Slurm on the namespace cluster: srun runs one task on each simulated host, in its namespace",
          "[cluster][slurm]") {
  skip_test_unless_netns_available();
  skip_test_unless_slurm_available();
  const auto started = std::chrono::steady_clock::now();
  VirtualCluster cluster(2);
  SlurmCluster slurm(cluster);
  const double up_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  INFO("cluster and Slurm up in " << up_seconds << " s");

  // Each task prints the node Slurm says it is on and the addresses of the namespace it runs in.
  const ProcessResult result =
      slurm.run({"srun", "--nodes=2", "--ntasks=2", "--label", "/bin/sh", "-c",
                 "echo node=$SLURMD_NODENAME; " + ip_program() + " -4 -o addr show dev eth0"},
                60s);
  INFO("srun: exit " << result.exit_code << (result.timed_out ? " (timed out)" : "") << "\n"
                     << result.output << "\n" << slurm.log_tails());
  REQUIRE(result.exited);
  REQUIRE(result.exit_code == 0);
  // Task t on node h<t> (the block distribution over two nodes), seeing only host t's address: each slurmd
  // started its task in its own namespace, and their output came back to srun in the test's.
  for (int task = 0; task < 2; ++task) {
    const std::string lines = task_output(result.output, task);
    INFO("task " << task << ":\n" << lines);
    // Built by appending: GCC 12 warns (-Wrestrict) wrongly on "literal" + std::string.
    const std::string node_line = std::string("node=").append(slurm.node_name(task)).append("\n");
    const std::string own_address = std::string(" ").append(cluster.address(task)).append("/24 ");
    const std::string other_address = std::string(" ").append(cluster.address(1 - task)).append("/");
    CHECK(lines.find(node_line) != std::string::npos);
    CHECK(lines.find(own_address) != std::string::npos);
    CHECK(lines.find(other_address) == std::string::npos);
  }
}

// What a launcher placing executives with Slurm relies on, checked on the Slurm it will meet: a command run by
// salloc in the test's namespace inside the allocation; a multi-prog step whose tasks SLURM_HOSTFILE places
// (--distribution=arbitrary); a task killed with SIGKILL while the others go on (--kill-on-bad-exit=0); that task
// restarted by a step of its own on the same node beside the running one (--overlap); the others stopped by
// SIGTERM. Then, with a batch job still running, the harness stops and leaves nothing behind. The controller
// runs in host 0's namespace here, the other placement the harness offers.
TEST_CASE("Slurm on the namespace cluster: hostfile placement, a killed task restarted beside its step, and no "
          "process outlives the harness",
          "[cluster][slurm]") {
  skip_test_unless_netns_available();
  skip_test_unless_slurm_available();
  VirtualCluster cluster(2);
  auto slurm = std::make_unique<SlurmCluster>(cluster, 0);
  const std::string dir = slurm->directory() + "/placement";
  REQUIRE(run_process({"/bin/mkdir", "-p", dir}, 10s).exit_code == 0);
  const std::string ip = ip_program();
  const std::string print_address = ip + " -4 -o addr show dev eth0";

  // Tasks 0, 1, 2 on h1, h0, h1; each prints its pid and address, then sleeps as the same process (exec).
  write_text(dir + "/hosts", "h1\nh0\nh1\n");
  write_text(dir + "/tasks.conf",
             "* /bin/sh -c 'echo \"pid $$ on $SLURMD_NODENAME\"; " + print_address + "; exec sleep 120'\n");
  write_text(dir + "/script.sh",
             "dir=" + dir + "\n"
             "wait_for() { i=0; while ! eval \"$1\" && [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done; }\n"
             "echo \"allocation $SLURM_JOB_ID on $SLURM_JOB_NODELIST\"\n"
             "SLURM_HOSTFILE=$dir/hosts srun --ntasks=3 --distribution=arbitrary --kill-on-bad-exit=0 --label \\\n"
             "  --multi-prog $dir/tasks.conf > $dir/step.out 2> $dir/step.err &\n"
             "step=$!\n"
             "wait_for '[ \"$(grep -c \" pid \" $dir/step.out)\" -ge 3 ]'\n"
             "kill -9 \"$(sed -n 's/^1: pid \\([0-9]*\\) .*/\\1/p' $dir/step.out)\"\n"
             "wait_for 'grep -q \"task 1: Killed\" $dir/step.err'\n"
             "srun --nodes=1 --ntasks=1 --nodelist=h0 --overlap --label /bin/sh -c \\\n"
             "  'echo \"restarted on $SLURMD_NODENAME\"; " + print_address + "'\n"
             "echo \"restart exit $?\"\n"
             // scancel reports an error (exit code 225, "Invalid job id specified") when a node of the step has
             // no task left, as h0 here, yet signals the tasks of the others.
             "scancel --signal=TERM \"$SLURM_JOB_ID.0\"\n"
             "wait $step\n"
             "echo \"step exit $?\"\n");
  const ProcessResult result = slurm->run({"salloc", "--nodes=2", "--exclusive", "--", "/bin/sh", dir + "/script.sh"}, 90s);
  const std::string step_out = read_text(dir + "/step.out");
  const std::string step_err = read_text(dir + "/step.err");
  INFO("salloc: exit " << result.exit_code << (result.timed_out ? " (timed out)" : "") << "\n" << result.output
                       << "\nstep stdout:\n" << step_out << "step stderr:\n" << step_err << "\n" << slurm->log_tails());
  REQUIRE(result.exited);
  REQUIRE(result.exit_code == 0);
  CHECK(result.output.find("allocation ") != std::string::npos);

  const int expected_host[] = {1, 0, 1};
  for (int task = 0; task < 3; ++task) {
    const std::string lines = task_output(step_out, task);
    const int host = expected_host[task];
    INFO("task " << task << " expected on " << slurm->node_name(host) << ":\n" << lines);
    CHECK(lines.find(std::string(" on ").append(slurm->node_name(host)).append("\n")) != std::string::npos);
    CHECK(lines.find(std::string(" ").append(cluster.address(host)).append("/24 ")) != std::string::npos);
  }
  CHECK(step_err.find("srun: error: h0: task 1: Killed") != std::string::npos);
  const std::string restarted = task_output(result.output, 0);
  CHECK(restarted.find("restarted on h0\n") != std::string::npos);
  CHECK(restarted.find(std::string(" ").append(cluster.address(0)).append("/24 ")) != std::string::npos);
  CHECK(result.output.find("restart exit 0") != std::string::npos);
  CHECK(result.output.find("step exit 143") != std::string::npos);  // 128 + SIGTERM: the others were stopped
  CHECK(step_err.find("Terminated") != std::string::npos);

  // A batch job left running on both hosts: stopping the harness ends it, daemons and job processes alike.
  const ProcessResult submitted = slurm->run(
      {"sbatch", "--parsable", "--nodes=2", "--output=" + dir + "/batch.out", "--wrap",
       "srun --nodes=2 --ntasks=2 --label /bin/sh -c 'echo running on $SLURMD_NODENAME; exec sleep 300'"});
  INFO("sbatch: " << submitted.output);
  REQUIRE(submitted.exit_code == 0);
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  while (task_output(read_text(dir + "/batch.out"), 1).empty() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(100ms);
  }
  INFO("batch output:\n" << read_text(dir + "/batch.out"));
  REQUIRE(!task_output(read_text(dir + "/batch.out"), 1).empty());
  const std::string directory = slurm->directory();
  slurm.reset();
  for (int host = 0; host < cluster.size(); ++host) {
    const ProcessResult pids = run_process({ip, "netns", "pids", cluster.namespace_name(host)}, 10s);
    INFO("processes left in host " << host << "'s namespace: " << pids.output);
    CHECK(pids.exit_code == 0);
    CHECK(pids.output.empty());
  }
  const std::vector<std::string> left = processes_naming(directory);
  INFO("processes naming " << directory << ":\n" << [&] {
    std::string text;
    for (const std::string& line : left) text += line + "\n";
    return text;
  }());
  CHECK(left.empty());
}
