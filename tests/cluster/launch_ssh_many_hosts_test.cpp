// daqx-launch over OpenSSH to 16 sshd hosts at once: the partition copied to several hosts at a time (never
// more than --fanout), every context brought up and driven; and a launch that fails on one host (its sshd
// stopped, its executive missing) names that host and leaves nothing running and no copy on any host.
#include <catch2/catch.hpp>

#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "../support/cluster_evb.hpp"
#include "../support/executive_process.hpp"
#include "../support/launcher_process.hpp"
#include "../support/netns.hpp"
#include "../support/partition_builder.hpp"
#include "../support/process.hpp"
#include "../support/ssh_hosts.hpp"

using namespace daqx::test;
using namespace std::chrono_literals;

namespace {

constexpr int kHosts = 16;
constexpr std::uint16_t kControl = 29700;
constexpr unsigned kFrames = 2000;  // per sender: a light run, done within a second of enable

std::uint32_t sender_tid(int context) { return 100 + static_cast<std::uint32_t>(context); }
std::uint32_t receiver_tid(int context) { return 200 + static_cast<std::uint32_t>(context); }

// A context's URL: one per host, and a second one on host 0 (two contexts share a host and its one copy).
struct PlacedContext {
  int host;
  std::uint16_t port;
};
std::vector<PlacedContext> placement() {
  std::vector<PlacedContext> contexts;
  for (int h = 0; h < kHosts; ++h) contexts.push_back({h, kControl});
  contexts.push_back({0, static_cast<std::uint16_t>(kControl + 1)});
  return contexts;
}

// Every context runs an nton sender and its receiver (frames handed over inside the executive: no transport),
// launched over ssh with the partition copied into `work_dir`; `host_rules` come before the rule for every host.
std::string many_hosts_partition(const VirtualCluster& cluster, const std::string& name, const std::string& work_dir,
                                 const std::vector<LaunchHostSettings>& host_rules = {}) {
  PartitionBuilder partition(name);
  const std::vector<PlacedContext> contexts = placement();
  for (std::size_t c = 0; c < contexts.size(); ++c) {
    const int i = static_cast<int>(c);
    ContextBuilder context = partition.context(cluster.url(contexts[c].host, contexts[c].port));
    context.module("libdaqx_nton.so");
    context.application("nton::Receiver", receiver_tid(i), static_cast<std::uint32_t>(c));
    context.application("nton::Sender", sender_tid(i), static_cast<std::uint32_t>(c))
        .property("receivers", std::to_string(receiver_tid(i)), "applications")
        .property("frameSize", "1024", "unsigned")
        .property("frameCount", std::to_string(kFrames), "unsigned")
        .property("window", "16", "unsigned");
  }
  partition.launch_engine("ssh");
  for (const LaunchHostSettings& rule : host_rules) partition.launch_host(rule);
  LaunchHostSettings every_host;
  every_host.pattern = "*";
  every_host.work_dir = work_dir;
  every_host.environment = {{"DAQX_MODULE_PATH", module_directory()}};
  partition.launch_host(every_host);
  return write_file(name + ".xml", partition.xml());
}

std::string made_directory(const std::string& name) {
  const std::string path = scratch_directory() + "/" + name;
  std::filesystem::create_directories(path);
  return path;
}

// What the launcher left in the hosts' work folder (all namespaces share this machine's file system).
std::vector<std::string> files_in(const std::string& directory) {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(directory)) names.push_back(entry.path().filename());
  return names;
}

// The daqx-executive processes left in any namespace, once those stopping have ended (within a bound).
std::vector<std::string> executives_left(const VirtualCluster& cluster) {
  std::vector<std::string> left;
  const auto deadline = std::chrono::steady_clock::now() + 20s;
  do {
    left.clear();
    for (int h = 0; h < cluster.size(); ++h)
      for (const std::string& executive : executives_on(cluster, h)) left.push_back("host " + std::to_string(h) + ": " + executive);
    if (left.empty()) break;
    std::this_thread::sleep_for(200ms);
  } while (std::chrono::steady_clock::now() < deadline);
  return left;
}

// An `ssh` first in the launcher's PATH that hands every command to the real one, except that a copy of the
// partition (its remote command writes a ".part" file) first records how many copies are in flight, then
// waits until `together` copies have begun: copies made one at a time never get there, and the wrapper then
// fails the copy (the launch fails, naming the host). Returns the folder to put first in PATH.
std::string copy_observing_ssh(const std::string& record_dir, unsigned together) {
  const std::string bin = made_directory("observing-ssh-bin");
  const std::string path = bin + "/ssh";
  std::ofstream script(path);
  script << "#!/bin/sh\n"
            "record='" << record_dir << "'\n"
            "case \"$*\" in\n"
            "  *.part*)\n"
            "    touch \"$record/began.$$\" \"$record/running.$$\"\n"
            "    ls \"$record\" | grep -c '^running\\.' >> \"$record/in-flight\"\n"
            "    tries=0\n"
            "    while [ \"$(ls \"$record\" | grep -c '^began\\.')\" -lt " << together << " ]; do\n"
            "      tries=$((tries + 1))\n"
            "      if [ $tries -gt 600 ]; then\n"
            "        echo \"copy-observing ssh: fewer than " << together << " copies began together\" >&2\n"
            "        rm -f \"$record/running.$$\"\n"
            "        exit 1\n"
            "      fi\n"
            "      sleep 0.05\n"
            "    done\n"
            "    '" << ssh_program() << "' \"$@\"\n"
            "    status=$?\n"
            "    rm -f \"$record/running.$$\"\n"
            "    exit $status ;;\n"
            "esac\n"
            "exec '" << ssh_program() << "' \"$@\"\n";
  script.close();
  std::filesystem::permissions(path, std::filesystem::perms::owner_all);
  return bin;
}

}  // namespace

TEST_CASE("daqx-launch --engine ssh copies the partition to 16 sshd hosts several at a time, never more than "
          "--fanout, brings up and drives 17 contexts, and leaves no process or copy behind",
          "[cluster][ssh][launch][fanout]") {
  skip_test_unless_netns_available();
  skip_test_unless_ssh_available();
  VirtualCluster cluster(kHosts);
  SshHosts ssh(cluster);
  const unsigned fanout = 4;
  const std::string work_dir = made_directory("many-hosts-work");
  const std::string record = made_directory("many-hosts-copies");
  const std::string partition = many_hosts_partition(cluster, "ssh-many-hosts", work_dir);
  const std::string logs = scratch_directory() + "/ssh-many-hosts-logs";
  LauncherProcess launcher({"--config", partition, "--ssh-config", ssh.client_config_path(), "--fanout",
                            std::to_string(fanout), "--drive", "--run", "120", "--log-dir", logs},
                           {"PATH=" + copy_observing_ssh(record, fanout) + ":" + std::getenv("PATH")});
  // Progress, not time: once every sender has sent its frames and had them acknowledged the run is ended
  // (--run is a bound).
  const std::vector<PlacedContext> contexts = placement();
  auto all_done = [&] {
    for (std::size_t c = 0; c < contexts.size(); ++c)
      if (!(application_metric(cluster.url(contexts[c].host, contexts[c].port), sender_tid(static_cast<int>(c)), "done") == 1))
        return false;
    return true;
  };
  const auto deadline = std::chrono::steady_clock::now() + 120s;
  while (!all_done() && launcher.running() && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(200ms);
  launcher.end_run();
  const std::optional<int> exit_code = launcher.wait(120s);
  const std::string output = launcher.output();
  INFO(output);
  REQUIRE(exit_code.has_value());
  CHECK(*exit_code == 0);
  CHECK_THAT(output, Catch::Contains("17 contexts of partition 'ssh-many-hosts' up through ssh"));
  CHECK_THAT(output, Catch::Contains("configured and enabled"));
  CHECK_THAT(output, Catch::Contains("all contexts stopped cleanly"));
  for (std::size_t c = 0; c < contexts.size(); ++c) {
    const std::string receiver = "nton/receiver/" + std::to_string(c);
    INFO(receiver);
    CHECK(launcher.summary_counter(receiver, "frames_received") == kFrames);
  }
  // One copy per host, made `fanout` at a time: all began (the wrapper's barrier let none through alone),
  // and no more than `fanout` were ever in flight.
  std::size_t began = 0;
  for (const std::string& name : files_in(record)) began += name.rfind("began.", 0) == 0 ? 1 : 0;
  CHECK(began == kHosts);
  std::istringstream in_flight(read_text(record + "/in-flight"));
  unsigned most = 0;
  for (unsigned n = 0; in_flight >> n;) most = std::max(most, n);
  CHECK(most <= fanout);
  CHECK(executives_left(cluster).empty());
  CHECK(files_in(work_dir).empty());
}

TEST_CASE("daqx-launch --engine ssh to 16 hosts, one of whose sshd is stopped, names that host, starts nothing "
          "and leaves no copy of the partition on the others", "[cluster][ssh][launch][fanout]") {
  skip_test_unless_netns_available();
  skip_test_unless_ssh_available();
  VirtualCluster cluster(kHosts);
  SshHosts ssh(cluster);
  const int down = 9;
  ssh.stop_host(down);
  const std::string work_dir = made_directory("many-hosts-down-work");
  const std::string partition = many_hosts_partition(cluster, "ssh-many-hosts-down", work_dir);
  LauncherProcess launcher({"--config", partition, "--ssh-config", ssh.client_config_path(), "--drive", "--run", "5",
                            "--log-dir", scratch_directory() + "/ssh-many-hosts-down-logs"});
  const std::optional<int> exit_code = launcher.wait(120s);
  const std::string output = launcher.output();
  INFO(output);
  REQUIRE(exit_code.has_value());
  CHECK(*exit_code == 1);
  CHECK_THAT(output, Catch::Contains("host " + cluster.address(down) + " cannot be reached or written: exit code 255"));
  CHECK_THAT(output, Catch::Contains("Connection refused"));
  CHECK_THAT(output, Catch::Contains("nothing was started"));
  // Only that host is named: the others were reached.
  for (int h = 0; h < kHosts; ++h)
    if (h != down) CHECK_THAT(output, !Catch::Contains("host " + cluster.address(h) + " cannot"));
  CHECK(executives_left(cluster).empty());
  CHECK(files_in(work_dir).empty());
}

TEST_CASE("daqx-launch --engine ssh to 16 hosts, one of which cannot run its executive, names that context and "
          "its host, stops every context that started and leaves nothing running and no copy behind",
          "[cluster][ssh][launch][fanout]") {
  skip_test_unless_netns_available();
  skip_test_unless_ssh_available();
  VirtualCluster cluster(kHosts);
  SshHosts ssh(cluster);
  const int broken = 5;
  const std::string work_dir = made_directory("many-hosts-broken-work");
  LaunchHostSettings missing_executive;
  missing_executive.pattern = cluster.address(broken);
  missing_executive.executive = scratch_directory() + "/no-such-daqx-executive";
  missing_executive.work_dir = work_dir;
  const std::string partition = many_hosts_partition(cluster, "ssh-many-hosts-broken", work_dir, {missing_executive});
  LauncherProcess launcher({"--config", partition, "--ssh-config", ssh.client_config_path(), "--drive", "--run", "5",
                            "--log-dir", scratch_directory() + "/ssh-many-hosts-broken-logs"});
  const std::optional<int> exit_code = launcher.wait(120s);
  const std::string output = launcher.output();
  INFO(output);
  REQUIRE(exit_code.has_value());
  CHECK(*exit_code == 1);
  CHECK_THAT(output, Catch::Contains("context " + cluster.url(broken, kControl) + " on host " + cluster.address(broken) +
                                     " over ssh failed to start (exit code 127)"));
  CHECK_THAT(output, Catch::Contains("no-such-daqx-executive"));
  CHECK(executives_left(cluster).empty());
  CHECK(files_in(work_dir).empty());
}
