// Expendable units (docs/operations.md, "Supervision"): an event builder of 2 RUs and 4 BUs, each its own
// context, whose partition lets one BU be lost (<Launch><Expendable class="evb::BU" max="1"/>), driven by
// daqx-launch --drive. A BU killed with SIGKILL and not restarted is lost within the allowance: the run goes on,
// ends cleanly, and its summary names the lost BU and the events lost with it. A second BU killed is past the
// allowance: the launcher fails the run, naming it; a second BU that stalls is past it for the EvM, which fails
// the run, naming it.
#include <catch2/catch.hpp>

#include <signal.h>

#include <algorithm>
#include <thread>

#include "../support/evb_run.hpp"
#include "../support/executive_process.hpp"
#include "../support/launcher_process.hpp"
#include "../support/partition_builder.hpp"
#include "../support/process.hpp"

using namespace daqx::test;
using Catch::Contains;

namespace {

constexpr int kRus = 2, kBus = 4;

// The partition (each unit its own context over TCP on free ports, every event's content checked by its BU) and
// where the launcher keeps each context's log.
struct ExpendablePartition {
  explicit ExpendablePartition(const std::string& name) : log_dir(scratch_directory() + "/" + name + "-logs") {
    PartitionBuilder partition(name);
    for (int j = 0; j < kBus; ++j) units.push_back({"evb::BU", bu(j), j, {}});
    for (int i = 0; i < kRus; ++i) units.push_back({"evb::RU", ru(i), i, {}});
    units.push_back({"evb::EvM", kEvm, 0, {}});
    for (const EvbUnit& unit : units) {
      ContextBuilder context = partition.context(unit.url());
      context.endpoint("tcp", "127.0.0.1", unit.data, "data");
      context.module("libdaqx_pttcp.so").module("libdaqx_evb.so");
      context.application(unit.cls, unit.tid, static_cast<std::uint32_t>(unit.instance), "data");
    }
    partition.launch_expendable({"evb::BU", "1", ""});
    path = write_file(name + ".xml", partition.xml());
  }

  const EvbUnit& unit(std::uint32_t tid) const {
    return *std::find_if(units.begin(), units.end(), [&](const EvbUnit& u) { return u.tid == tid; });
  }
  std::string log_of(std::uint32_t tid) const { return log_dir + "/127.0.0.1_" + std::to_string(unit(tid).control) + ".log"; }
  double metric(std::uint32_t tid, const std::string& name) const { return application_metric(unit(tid).url(), tid, name); }

  // Kills the BU's executive with SIGKILL once it has built events.
  void kill_builder(LauncherProcess& launcher, std::uint32_t tid) const {
    REQUIRE(wait_while_running(launcher, [&] { return metric(tid, "events_built") > 1000; }));
    const pid_t pid = executive_pid_in_log(log_of(tid));
    REQUIRE(pid > 0);
    REQUIRE(kill(pid, SIGKILL) == 0);
  }

  // Polls `condition` while the launcher runs, up to a bound that only a stuck run reaches.
  static bool wait_while_running(LauncherProcess& launcher, const std::function<bool()>& condition) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(90);
    while (!condition() && launcher.running() && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    return condition();
  }

  std::vector<EvbUnit> units;
  std::string log_dir;
  std::string path;
};

}  // namespace

TEST_CASE("2x4_expendableBU: a BU killed and not restarted is lost within the partition's allowance, the run goes on "
          "and ends cleanly, and its summary names the lost BU and its lost events, every other event built once",
          "[launch][process][evb][expendable]") {
  const ExpendablePartition partition("expendable-within");
  LauncherProcess launcher({"--config", partition.path, "--drive", "--run", "600", "--log-dir", partition.log_dir,
                            "--no-dashboard"});
  INFO("launcher so far:\n" << launcher.output());
  partition.kill_builder(launcher, bu(1));
  const std::string lost = "lost: evb::BU " + std::to_string(bu(1)) + " (context " + partition.unit(bu(1)).url() +
                           ", died (killed by signal 9";
  REQUIRE(ExpendablePartition::wait_while_running(launcher, [&] { return launcher.output().find(lost) != std::string::npos; }));
  // The run goes on without it: the EvM dropped it, and the other BUs keep building.
  REQUIRE(ExpendablePartition::wait_while_running(launcher, [&] { return partition.metric(kEvm, "bus_alive") == kBus - 1; }));
  const double completed_at_loss = partition.metric(kEvm, "events_completed");
  REQUIRE(ExpendablePartition::wait_while_running(
      launcher, [&] { return partition.metric(kEvm, "events_completed") > completed_at_loss + 10000; }));
  REQUIRE(launcher.running());
  launcher.end_run();
  const std::optional<int> exit_code = launcher.wait(std::chrono::seconds(120));
  const std::string output = launcher.output();
  INFO(output);
  REQUIRE(exit_code.has_value());
  CHECK(*exit_code == 0);
  CHECK_THAT(output, Contains("1 evb::BU lost, 1 allowed: the run goes on"));
  CHECK_THAT(output, Contains("  lost: evb/bu/1 (context " + partition.unit(bu(1)).url() + ", died (killed by signal 9"));
  CHECK_THAT(output, Contains("daqx-launch: " + lost));
  CHECK_THAT(output, Contains("all contexts stopped cleanly"));
  CHECK(output.find("does not answer (3 of 3") == std::string::npos);

  // Every event assigned is completed or lost with the BU, none twice, none corrupt or incomplete.
  const double assigned = launcher.summary_counter("evb/evm/0", "events_assigned");
  const double completed = launcher.summary_counter("evb/evm/0", "events_completed");
  const double events_lost = launcher.summary_counter("evb/evm/0", "events_lost");
  INFO("assigned " << assigned << " completed " << completed << " lost " << events_lost);
  CHECK(events_lost > 0);
  CHECK(completed + events_lost == assigned);
  CHECK(launcher.summary_counter("evb/evm/0", "bu_drops") == 1);
  CHECK(launcher.summary_counter("evb/evm/0", "unexpected_discards") == 0);
  CHECK(launcher.summary_counter("evb/evm/0", "events_corrupt") == 0);
  CHECK(launcher.summary_counter("evb/evm/0", "events_incomplete") == 0);
  double built = 0;
  for (const char* survivor : {"evb/bu/0", "evb/bu/2", "evb/bu/3"}) {
    INFO(survivor);
    CHECK(launcher.summary_counter(survivor, "events_built") > 0);
    CHECK(launcher.summary_counter(survivor, "events_corrupt") == 0);
    CHECK(launcher.summary_counter(survivor, "events_incomplete") == 0);
    CHECK(launcher.summary_counter(survivor, "duplicate_pieces") == 0);
    built += launcher.summary_counter(survivor, "events_built");
  }
  // What the survivors built the EvM counts completed; the lost BU's own part died with it.
  CHECK(built <= completed);
}

TEST_CASE("2x4_expendableBU: a second BU killed is past the partition's allowance of one, and the launcher fails the "
          "run naming the allowance", "[launch][process][evb][expendable]") {
  const ExpendablePartition partition("expendable-past");
  LauncherProcess launcher({"--config", partition.path, "--drive", "--run", "600", "--log-dir", partition.log_dir,
                            "--no-dashboard"});
  INFO("launcher so far:\n" << launcher.output());
  partition.kill_builder(launcher, bu(1));
  REQUIRE(ExpendablePartition::wait_while_running(launcher, [&] { return partition.metric(kEvm, "bus_alive") == kBus - 1; }));
  REQUIRE(launcher.running());
  partition.kill_builder(launcher, bu(2));
  // The launcher ends the run by itself.
  const std::optional<int> exit_code = launcher.wait(std::chrono::seconds(120));
  const std::string output = launcher.output();
  INFO(output);
  REQUIRE(exit_code.has_value());
  CHECK(*exit_code == 1);
  CHECK_THAT(output, Contains("1 evb::BU lost, 1 allowed: the run goes on"));
  CHECK_THAT(output, Contains("daqx-launch: context " + partition.unit(bu(2)).url() + " on this machine (pid "));
  CHECK_THAT(output, Contains("died (killed by signal 9 (Killed)); its restart policy is never; 2 evb::BU lost, 1 allowed "
                              "by the partition's <Expendable> at " + partition.path + ":"));
}

TEST_CASE("2x4_expendableBU: a BU lost and a second one that stalls (SIGSTOP) are past the allowance for the EvM, which "
          "fails the run naming it, and the launcher ends the run", "[launch][process][evb][expendable]") {
  const ExpendablePartition partition("expendable-evm");
  LauncherProcess launcher({"--config", partition.path, "--drive", "--run", "600", "--log-dir", partition.log_dir,
                            "--no-dashboard"});
  INFO("launcher so far:\n" << launcher.output());
  partition.kill_builder(launcher, bu(1));
  REQUIRE(ExpendablePartition::wait_while_running(launcher, [&] { return partition.metric(kEvm, "bus_alive") == kBus - 1; }));
  // Alive for the launcher, silent for the EvM, which drops it after buTimeout: two BUs out of the run.
  REQUIRE(ExpendablePartition::wait_while_running(launcher, [&] { return partition.metric(bu(2), "events_built") > 1000; }));
  const pid_t stalled = executive_pid_in_log(partition.log_of(bu(2)));
  REQUIRE(stalled > 0);
  REQUIRE(kill(stalled, SIGSTOP) == 0);
  const std::string failed = "evb/evm/0: failed: 2 evb::BU lost, 1 allowed by the partition's <Expendable>: BU " +
                             std::to_string(bu(1)) + " dropped: ";
  const bool evm_failed = ExpendablePartition::wait_while_running(
      launcher, [&] { return read_text(partition.log_of(kEvm)).find(failed) != std::string::npos; });
  // Resumed, it answers the launcher's stop and halt.
  REQUIRE(kill(stalled, SIGCONT) == 0);
  const std::optional<int> exit_code = launcher.wait(std::chrono::seconds(180));
  const std::string output = launcher.output();
  INFO(output << "\nEvM log:\n" << read_text(partition.log_of(kEvm)));
  CHECK(evm_failed);
  CHECK_THAT(read_text(partition.log_of(kEvm)), Contains("; BU " + std::to_string(bu(2)) + " dropped: no request for "));
  REQUIRE(exit_code.has_value());
  CHECK(*exit_code == 1);
}
