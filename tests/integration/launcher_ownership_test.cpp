// Which executives a launcher drives (docs/operations.md): only those it started, known by the launch instance it
// gave them. A partition whose control address another process serves is refused before anything starts; an
// executive of another launch, or started by hand, is never driven; and a launcher whose executives someone else
// drove says so and ends non-zero. Real launchers, executives and sockets on loopback.
#include <catch2/catch.hpp>

#include <Poco/JSON/Parser.h>

#include <signal.h>

#include <filesystem>
#include <regex>
#include <thread>

#include "../support/executive_process.hpp"
#include "../support/launcher_process.hpp"
#include "../support/loopback_listener.hpp"
#include "../support/partition_builder.hpp"
#include "../support/process.hpp"

using namespace daqx::test;
using Catch::Contains;
using Clock = std::chrono::steady_clock;

namespace {

// Bounds against a hang, not speed checks.
constexpr auto kLaunchEnds = std::chrono::seconds(120);
constexpr auto kRefusalEnds = std::chrono::seconds(60);

struct ProbePartition {
  std::string path;
  std::vector<std::string> urls;
  std::vector<std::uint16_t> ports;
};

// `contexts` light contexts (one test::Probe each) on free loopback ports; `restart`: a restart rule for them.
ProbePartition probe_partition(const std::string& name, std::size_t contexts, const LaunchRestartSettings* restart = nullptr,
                               const LaunchHostSettings* host = nullptr) {
  ProbePartition made;
  PartitionBuilder partition(name);
  for (std::size_t i = 0; i < contexts; ++i) {
    made.ports.push_back(free_port());
    made.urls.push_back("http://127.0.0.1:" + std::to_string(made.ports.back()));
    partition.context(made.urls.back())
        .module("libdaqx_test_probe.so")
        .application("test::Probe", static_cast<std::uint32_t>(i + 1), static_cast<std::uint32_t>(i));
  }
  if (restart != nullptr) partition.launch_restart(*restart);
  if (host != nullptr) partition.launch_host(*host);
  made.path = write_file(name + ".xml", partition.xml());
  return made;
}

Poco::JSON::Object::Ptr executive_of(const std::string& url) {
  const daqx::HttpReply reply = daqx::ControlClient(url, std::chrono::seconds(5)).get("/api/executive");
  if (reply.status != 200) return nullptr;
  return Poco::JSON::Parser().parse(reply.body).extract<Poco::JSON::Object::Ptr>();
}

// The states of the context's applications, "Enabled Enabled"; empty when it does not answer.
std::string states_of(const std::string& url) {
  const daqx::HttpReply reply = daqx::ControlClient(url, std::chrono::seconds(5)).get("/api/applications");
  if (reply.status != 200) return {};
  const Poco::JSON::Array::Ptr applications = Poco::JSON::Parser().parse(reply.body).extract<Poco::JSON::Array::Ptr>();
  std::string states;
  for (std::size_t i = 0; i < applications->size(); ++i)
    states.append(i == 0 ? "" : " ").append(applications->getObject(static_cast<unsigned>(i))->getValue<std::string>("state"));
  return states;
}

// Until every context answers in `run` (its applications Enabled), while the launcher runs.
bool wait_run(LauncherProcess& launcher, const std::vector<std::string>& urls, std::uint64_t run) {
  const auto deadline = Clock::now() + kLaunchEnds;
  while (Clock::now() < deadline && launcher.running()) {
    bool all = true;
    for (const std::string& url : urls) {
      const Poco::JSON::Object::Ptr executive = executive_of(url);
      all = all && executive && executive->getValue<std::uint64_t>("run") == run;
    }
    if (all) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return false;
}

// The launch instance the launcher printed when its contexts came up; empty when it has not.
std::string printed_instance(const LauncherProcess& launcher) {
  std::smatch match;
  const std::string output = launcher.output();
  static const std::regex printed("launch instance ([0-9a-f]{32})\\)");
  return std::regex_search(output, match, printed) ? match[1].str() : std::string();
}

// daqx-launch --drive of the partition, for `seconds` (a bound: the tests end the runs they wait for) in run `run`.
std::vector<std::string> launch_arguments(const ProbePartition& partition, const std::string& logs, const std::string& run,
                                          const std::string& seconds = "300") {
  return {"--config", partition.path, "--drive", "--run", seconds, "--log-dir", logs, "--run-number", run, "--no-dashboard"};
}

// The same as a command line, for run_process.
std::vector<std::string> launch_command(std::vector<std::string> arguments) {
  arguments.insert(arguments.begin(), tool_program("daqx-launch"));
  return arguments;
}

}  // namespace

TEST_CASE("a second daqx-launch of a partition another launcher runs refuses before it starts anything, naming each "
          "context and the executive serving it (exit 2), and the first launcher's run goes on and ends cleanly",
          "[launch][ownership]") {
  const ProbePartition partition = probe_partition("ownership-two-launchers", 2);
  LauncherProcess first(launch_arguments(partition, scratch_directory() + "/ownership-first", "5"));
  INFO(last_lines(first.output(), 30));
  REQUIRE(wait_run(first, partition.urls, 5));
  const std::string instance = printed_instance(first);
  REQUIRE_FALSE(instance.empty());

  // Each executive says which process it is: the first launcher's instance and its own pid.
  std::vector<long long> pids;
  for (const std::string& url : partition.urls) {
    const Poco::JSON::Object::Ptr executive = executive_of(url);
    REQUIRE(executive);
    CHECK(executive->getValue<std::string>("instance") == instance);
    CHECK(executive->getValue<std::string>("context") == url);
    pids.push_back(executive->getValue<long long>("pid"));
  }

  const std::string second_logs = scratch_directory() + "/ownership-second";
  const ProcessResult second = run_process(launch_command(launch_arguments(partition, second_logs, "6", "5")), kRefusalEnds);
  INFO(second.output);
  CHECK(outcome(second) == "exit code 2");
  for (std::size_t i = 0; i < partition.urls.size(); ++i)
    CHECK_THAT(second.output, Contains("daqx-launch: context " + partition.urls[i] + ": its control address 127.0.0.1:" +
                                       std::to_string(partition.ports[i]) + " is served by another process, daqx-executive pid " +
                                       std::to_string(pids[i]) + " of partition 'ownership-two-launchers' (launch instance " +
                                       instance + ")"));
  CHECK_THAT(second.output, Contains("2 of 2 control addresses of partition 'ownership-two-launchers' are in use: nothing started"));
  CHECK_FALSE(std::filesystem::exists(second_logs));  // not even its log folder

  // The first run untouched: the same executives, still Enabled in run 5.
  for (std::size_t i = 0; i < partition.urls.size(); ++i) {
    const Poco::JSON::Object::Ptr executive = executive_of(partition.urls[i]);
    REQUIRE(executive);
    CHECK(executive->getValue<long long>("pid") == pids[i]);
    CHECK(executive->getValue<std::uint64_t>("run") == 5);
    CHECK(states_of(partition.urls[i]) == "Enabled");
  }
  first.end_run();
  CHECK(first.wait(kLaunchEnds) == 0);
  CHECK_THAT(first.output(), Contains("daqx-launch: stop: 2/2 contexts"));
  CHECK_THAT(first.output(), Contains("daqx-launch: all contexts stopped cleanly\n"));
  CHECK_THAT(first.output(), !Contains("driven outside"));
}

TEST_CASE("a context whose control port a program that is not daqx holds is refused before anything starts (exit 2), "
          "and no other context of the partition is started", "[launch][ownership]") {
  const ProbePartition partition = probe_partition("ownership-plain-socket", 2);
  const LoopbackListener held(partition.ports[1]);
  const std::string logs = scratch_directory() + "/ownership-plain-socket";
  const ProcessResult launch = run_process(launch_command(launch_arguments(partition, logs, "3", "5")), kRefusalEnds);
  INFO(launch.output);
  CHECK(outcome(launch) == "exit code 2");
  CHECK_THAT(launch.output, Contains("daqx-launch: context " + partition.urls[1] + ": its control address 127.0.0.1:" +
                                     std::to_string(partition.ports[1]) + " is served by another process, a process that "
                                     "takes the connection and does not answer as a daqx executive"));
  CHECK_THAT(launch.output, Contains("1 of 2 control addresses of partition 'ownership-plain-socket' are in use: nothing started"));
  CHECK_THAT(launch.output, !Contains(partition.urls[0] + ":"));  // the free one is not named
  CHECK_FALSE(std::filesystem::exists(logs));
  CHECK_FALSE(listened_on(partition.ports[0]));  // its executive was never started
}

TEST_CASE("executives started by hand on a partition's addresses, with another launch instance or none, are "
          "refused (exit 2) and left as they were: running, Halted, in no run", "[launch][ownership]") {
  const ProbePartition partition = probe_partition("ownership-by-hand", 2);
  ExecutiveProcess other_launch(partition.path, partition.urls[0], {"--launch-instance", "someone-else-42"});
  ExecutiveProcess by_hand(partition.path, partition.urls[1]);
  REQUIRE(other_launch.wait_ready());
  REQUIRE(by_hand.wait_ready());
  const Poco::JSON::Object::Ptr other_identity = executive_of(partition.urls[0]);
  const Poco::JSON::Object::Ptr hand_identity = executive_of(partition.urls[1]);
  REQUIRE(other_identity);
  REQUIRE(hand_identity);
  CHECK(other_identity->getValue<std::string>("instance") == "someone-else-42");
  CHECK(other_identity->getValue<long long>("pid") == other_launch.pid());
  CHECK(hand_identity->isNull("instance"));
  CHECK(hand_identity->getValue<long long>("pid") == by_hand.pid());

  const std::string logs = scratch_directory() + "/ownership-by-hand";
  const ProcessResult launch = run_process(launch_command(launch_arguments(partition, logs, "4", "5")), kRefusalEnds);
  INFO(launch.output);
  CHECK(outcome(launch) == "exit code 2");
  CHECK_THAT(launch.output, Contains(partition.urls[0] + ": its control address 127.0.0.1:" + std::to_string(partition.ports[0]) +
                                     " is served by another process, daqx-executive pid " + std::to_string(other_launch.pid()) +
                                     " of partition 'ownership-by-hand' (launch instance someone-else-42)"));
  CHECK_THAT(launch.output, Contains(partition.urls[1] + ": its control address 127.0.0.1:" + std::to_string(partition.ports[1]) +
                                     " is served by another process, daqx-executive pid " + std::to_string(by_hand.pid()) +
                                     " of partition 'ownership-by-hand' (started without a launch instance)"));
  CHECK(other_launch.running());
  CHECK(by_hand.running());
  for (const std::string& url : partition.urls) {
    CHECK(states_of(url) == "Halted");
    CHECK(executive_of(url)->getValue<std::uint64_t>("run") == 0);
  }
}

TEST_CASE("an executive refuses a launch instance that is not 1 to 64 of 0-9, a-z, A-Z and '-' (exit 2)",
          "[launch][ownership]") {
  const ProbePartition partition = probe_partition("ownership-bad-instance", 1);
  for (const std::string& bad : {std::string("has space"), std::string(""), std::string(65, 'a'), std::string("a_b")}) {
    const ProcessResult run = run_process({executive_program(), "--config", partition.path, "--context", partition.urls[0],
                                           "--launch-instance", bad}, std::chrono::seconds(30));
    INFO(run.output);
    CHECK(outcome(run) == "exit code 2");
    CHECK_THAT(run.output, Contains("--launch-instance '" + bad + "' is not 1 to 64 of 0-9, a-z, A-Z and '-'"));
  }
}

TEST_CASE("an executive that answers on its context's URL with another launch instance than the launcher gave is "
          "not driven: the launch stops, naming it (exit 1), and it is never configured", "[launch][ownership]") {
  // The launcher's "executive" is a wrapper that runs the real one under another instance, as an executive of
  // another launch answering there would.
  const std::string wrapper = write_file("ownership-impostor.sh",
                                         "#!/bin/sh\n# --config P --context URL ...: the launcher's own instance dropped\n"
                                         "exec '" + executive_program() + "' \"$1\" \"$2\" \"$3\" \"$4\" --stop-on-stdin-eof "
                                         "--launch-instance impostor-1\n");
  std::filesystem::permissions(wrapper, std::filesystem::perms::owner_exec, std::filesystem::perm_options::add);
  LaunchHostSettings host;
  host.pattern = "*";
  host.executive = wrapper;
  const ProbePartition partition = probe_partition("ownership-impostor", 1, nullptr, &host);
  LauncherProcess launcher(launch_arguments(partition, scratch_directory() + "/ownership-impostor", "13"));
  const std::optional<int> code = launcher.wait(kLaunchEnds);
  const std::string output = launcher.output();
  INFO(output);
  CHECK(code == 1);
  CHECK_THAT(output, Contains("daqx-launch: context " + partition.urls[0] + ": its control address is served by another "
                              "process, daqx-executive pid "));
  CHECK_THAT(output, Contains("of partition 'ownership-impostor' (launch instance impostor-1), not by the executive this "
                              "launcher started on this machine"));
  CHECK_THAT(output, !Contains("configure:"));  // nothing was driven
  CHECK_THAT(output, !Contains("up through local"));
}

TEST_CASE("a launcher whose run someone else stops and halts says so and ends with exit 1, naming every context "
          "driven outside it", "[launch][ownership]") {
  const ProbePartition partition = probe_partition("ownership-driven-elsewhere", 2);
  LauncherProcess launcher(launch_arguments(partition, scratch_directory() + "/ownership-driven-elsewhere", "7"));
  INFO(last_lines(launcher.output(), 40));
  REQUIRE(wait_run(launcher, partition.urls, 7));

  // What the second launcher used to do to the first one's run: stop, then halt, through another client.
  for (const char* command : {"stop", "halt"}) {
    const ProcessResult driven = run_process({tool_program("daqxctl"), "--config", partition.path, command}, std::chrono::seconds(60));
    INFO(driven.output);
    CHECK(outcome(driven) == "exit code 0");
  }
  // The launcher ends its run by itself (its --run is 300 s): what it enabled is no longer Enabled.
  const std::optional<int> code = launcher.wait(kLaunchEnds);
  const std::string output = launcher.output();
  INFO(output);
  CHECK(code == 1);
  for (const std::string& url : partition.urls) {
    CHECK_THAT(output, Contains("daqx-launch: " + url + " was driven outside this launcher: "));
  }
  CHECK_THAT(output, Contains("where this launcher enabled it in run 7"));
  CHECK_THAT(output, Contains("daqx-launch: all contexts stopped cleanly, but 2 of them were driven outside this launcher"));
  CHECK_THAT(output, !Contains("daqx-launch: all contexts stopped cleanly\n"));
}

TEST_CASE("a context whose address another executive takes while it waits for its restart is not adopted: the "
          "launcher's own executive fails there, the run ends with exit 1, the other executive is left Halted",
          "[launch][ownership]") {
  const std::string pattern = "*";
  const LaunchRestartSettings restart{pattern, "on-failure", "1", "10", "10"};
  const ProbePartition partition = probe_partition("ownership-restart", 2, &restart);
  LauncherProcess launcher(launch_arguments(partition, scratch_directory() + "/ownership-restart", "8"));
  INFO(last_lines(launcher.output(), 40));
  REQUIRE(wait_run(launcher, partition.urls, 8));

  // Killed: the launcher restarts it after 10 s. Before that another executive (another launch's) takes its port.
  const Poco::JSON::Object::Ptr killed = executive_of(partition.urls[0]);
  REQUIRE(killed);
  REQUIRE(::kill(static_cast<pid_t>(killed->getValue<long long>("pid")), SIGKILL) == 0);
  const auto freed_by = Clock::now() + std::chrono::seconds(30);
  while (listened_on(partition.ports[0]) && Clock::now() < freed_by) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ExecutiveProcess intruder(partition.path, partition.urls[0], {"--launch-instance", "another-launch"});
  REQUIRE(intruder.wait_ready());

  const std::optional<int> code = launcher.wait(kLaunchEnds);
  const std::string output = launcher.output();
  INFO(output);
  CHECK(code == 1);
  // Its own executive could not listen there, or it saw the other one answer first: either way, said, and the
  // other one never driven.
  CHECK_THAT(output, Contains("Address already in use") || Contains("served by another process, daqx-executive pid " +
                                                                     std::to_string(intruder.pid())));
  CHECK(intruder.running());
  CHECK(states_of(partition.urls[0]) == "Halted");
  const Poco::JSON::Object::Ptr intruder_identity = executive_of(partition.urls[0]);
  REQUIRE(intruder_identity);
  CHECK(intruder_identity->getValue<std::string>("instance") == "another-launch");
  CHECK(intruder_identity->getValue<std::uint64_t>("run") == 0);
}

TEST_CASE("the executives of a killed launcher stop by themselves, and a new launcher of the partition then starts it",
          "[launch][ownership]") {
  const ProbePartition partition = probe_partition("ownership-killed-launcher", 2);
  {
    LauncherProcess killed(launch_arguments(partition, scratch_directory() + "/ownership-killed-first", "11"));
    INFO(last_lines(killed.output(), 30));
    REQUIRE(wait_run(killed, partition.urls, 11));
    killed.signal(SIGKILL);
    REQUIRE_FALSE(killed.wait(std::chrono::seconds(30)).has_value());  // killed: no exit code
  }
  // Their standard input ended with the launcher (--stop-on-stdin-eof): they stop, freeing the addresses.
  const auto freed_by = Clock::now() + std::chrono::seconds(60);
  auto any_listened = [&] { return listened_on(partition.ports[0]) || listened_on(partition.ports[1]); };
  while (any_listened() && Clock::now() < freed_by) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  REQUIRE_FALSE(any_listened());

  const std::string logs = scratch_directory() + "/ownership-killed-next";
  const ProcessResult next = run_process(launch_command(launch_arguments(partition, logs, "12", "2")), kLaunchEnds);
  INFO(next.output);
  CHECK(outcome(next) == "exit code 0");
  CHECK_THAT(next.output, Contains("daqx-launch: configured and enabled, run 12"));
  CHECK_THAT(next.output, Contains("daqx-launch: all contexts stopped cleanly\n"));
}
