// What a clean end of a partition logs: a run, then stop, halt and exit over pttcp between two executives gives no
// warning (peers closing is expected then), while a peer killed in the middle of a run does.
#include <catch2/catch.hpp>

#include <algorithm>
#include <optional>
#include <cmath>
#include <thread>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "../support/executive_metrics.hpp"
#include "../support/doc_blocks.hpp"
#include "../support/executive_process.hpp"
#include "../support/launcher_process.hpp"
#include "../support/partition_builder.hpp"
#include "../support/process.hpp"

using namespace daqx::test;
using Catch::Contains;

namespace {

std::string url(std::uint16_t port) { return "http://127.0.0.1:" + std::to_string(port); }

struct TwoContexts {
  std::string path;
  std::string receivers_url;
  std::string senders_url;
};

// config/local-nton-tcp.xml on ports of its own: two receivers in one executive, two senders in the other.
TwoContexts two_context_partition(const std::string& name) {
  TwoContexts made;
  made.receivers_url = url(free_port());
  made.senders_url = url(free_port());
  PartitionBuilder partition(name);
  ContextBuilder receivers = partition.context(made.receivers_url);
  receivers.endpoint("tcp", "127.0.0.1", free_port(), "data");
  receivers.module("libdaqx_pttcp.so").module("libdaqx_nton.so");
  receivers.application("nton::Receiver", 21, 0, "data");
  receivers.application("nton::Receiver", 22, 1, "data");
  ContextBuilder senders = partition.context(made.senders_url);
  senders.endpoint("tcp", "127.0.0.1", free_port(), "data");
  senders.module("libdaqx_pttcp.so").module("libdaqx_nton.so");
  senders.application("nton::Sender", 11, 0, "data").property("frameSize", "16384", "unsigned");
  senders.application("nton::Sender", 12, 1, "data").property("frameSize", "16384", "unsigned");
  made.path = write_file(name + ".xml", partition.xml());
  return made;
}

ProcessResult daqxctl(const std::string& partition, const std::string& command) {
  return run_process({tool_program("daqxctl"), "--config", partition, command}, std::chrono::seconds(60));
}

// The lines of a log at the given levels, text layout: "TIME warning URL component: message".
std::vector<std::string> lines_at(const std::string& log, const std::string& levels) {
  std::vector<std::string> found;
  std::istringstream in(log);
  const std::regex level("^\\S+ (" + levels + ") ");
  for (std::string line; std::getline(in, line);)
    if (std::regex_search(line, level)) found.push_back(line);
  return found;
}

std::vector<std::string> warnings_in(const std::string& log) { return lines_at(log, "warning|error"); }

// Both executives up, configured, enabled and moving frames: receiver 21 has seen frames of this run.
void start_run(const TwoContexts& partition, ExecutiveProcess& receivers, ExecutiveProcess& senders) {
  REQUIRE(receivers.wait_ready());
  REQUIRE(senders.wait_ready());
  for (const char* command : {"configure", "enable"}) {
    const ProcessResult result = daqxctl(partition.path, command);
    INFO(command << ": " << result.output);
    REQUIRE(result.exit_code == 0);
  }
  const ExecutiveProcess::Progress progress =
      receivers.wait_progress(21, "frames_received", 2000, std::chrono::seconds(30));
  INFO(progress.trace << "\n" << receivers.output() << senders.output());
  REQUIRE(progress.reached);
}

}  // namespace

TEST_CASE("a run, then stop, halt and exit of a two-context pttcp partition logs no warning, whichever executive "
          "ends first", "[logs][process]") {
  for (const bool receivers_first : {true, false}) {
    INFO((receivers_first ? "the receiving executive ends first" : "the sending executive ends first"));
    const TwoContexts partition = two_context_partition(receivers_first ? "clean-end-a" : "clean-end-b");
    ExecutiveProcess receivers(partition.path, partition.receivers_url);
    ExecutiveProcess senders(partition.path, partition.senders_url);
    start_run(partition, receivers, senders);
    for (const char* command : {"stop", "halt"}) {
      const ProcessResult result = daqxctl(partition.path, command);
      INFO(command << ": " << result.output);
      REQUIRE(result.exit_code == 0);
    }
    ExecutiveProcess& first = receivers_first ? receivers : senders;
    ExecutiveProcess& second = receivers_first ? senders : receivers;
    CHECK(first.stop() == 0);
    // The other sees its peer go: give its transport time to notice and log it before it ends too.
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    CHECK(second.stop() == 0);
    const std::string logs = receivers.output() + senders.output();
    INFO(logs);
    CHECK(warnings_in(logs).empty());
    CHECK(lines_at(logs, "debug").empty());  // debug is off unless asked for
    // The closes were seen, and logged below warning.
    CHECK_THAT(logs, Contains(" ended: ") || Contains(" closed: "));
  }
}

TEST_CASE("an executive that ends during a run (SIGTERM, no stop or halt first) logs no warning of its own for "
          "its connections", "[logs][process]") {
  const TwoContexts partition = two_context_partition("exit-in-run");
  ExecutiveProcess receivers(partition.path, partition.receivers_url);
  ExecutiveProcess senders(partition.path, partition.senders_url);
  start_run(partition, receivers, senders);
  // Its own shutdown stops and halts its applications first: what it then logs about closing is no loss.
  CHECK(senders.stop() == 0);
  const std::vector<std::string> own = warnings_in(senders.output());
  INFO(senders.output());
  CHECK(own.empty());
  CHECK(receivers.stop() == 0);
}

TEST_CASE("a peer killed in the middle of a run is a warning in the log of the executive that loses it",
          "[logs][process]") {
  const TwoContexts partition = two_context_partition("killed-in-run");
  ExecutiveProcess receivers(partition.path, partition.receivers_url);
  ExecutiveProcess senders(partition.path, partition.senders_url);
  start_run(partition, receivers, senders);
  receivers.kill_now();
  // The senders were sending to it: their connection to it is lost, in the run (its connection from it going
  // down is a warning too, and may come first).
  const auto lost_warning = [&] {
    const std::vector<std::string> found = warnings_in(senders.output());
    return std::any_of(found.begin(), found.end(), [](const std::string& line) {
      return line.find(" warning ") != std::string::npos && line.find(" lost: ") != std::string::npos;
    });
  };
  const bool warned = wait_until(lost_warning, std::chrono::seconds(20));
  INFO(senders.output());
  CHECK(warned);
  CHECK(senders.stop() == 0);
}

TEST_CASE("daqx-launch --drive through a run and its end leaves no warning in any executive's log",
          "[logs][process][launch]") {
  const TwoContexts partition = two_context_partition("launched-clean-end");
  const std::string log_dir = scratch_directory() + "/launched-clean-end-logs";
  LauncherProcess launcher({"--config", partition.path, "--drive", "--run", "2", "--log-dir", log_dir});
  const std::optional<int> code = launcher.wait(std::chrono::seconds(120));
  INFO(launcher.output());
  REQUIRE(code == 0);
  const std::vector<std::string> logs = files_ending_with(log_dir, ".log");
  REQUIRE(logs.size() == 2);
  for (const std::string& path : logs) {
    const std::string log = read_text(path);
    INFO(path << ":\n" << log);
    CHECK_FALSE(log.empty());
    CHECK(warnings_in(log).empty());
    CHECK(lines_at(log, "debug").empty());  // debug is off unless asked for, also through the launcher
  }
}
