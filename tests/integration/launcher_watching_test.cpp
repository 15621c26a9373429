// Watching a partition of many contexts costs a fixed number of threads: daqx-launch --drive with its dashboard
// and daqxctl watch over 65 light contexts on loopback, their threads read from /proc while they watch, and what
// they show folded to the totals per kind (docs/operations.md, "Watching a running partition").
#include <catch2/catch.hpp>

#include <Poco/JSON/Parser.h>

#include <sys/wait.h>

#include <fstream>
#include <regex>
#include <thread>

#include "../support/executive_process.hpp"
#include "../support/launcher_process.hpp"
#include "../support/partition_builder.hpp"
#include "../support/process.hpp"

using namespace daqx::test;
using Clock = std::chrono::steady_clock;

namespace {

constexpr std::size_t kContexts = 65;
// The launcher's own threads (main, supervision, the dashboard's server and view) and the poller's 8, with room;
// a thread per context would be 65 more.
constexpr long kLauncherThreadBound = 32;
constexpr long kWatchThreadBound = 16;  // daqxctl watch: its main thread and the poller's 8

// Threads of a process as /proc/PID/status says; -1 when it has ended.
long threads_of(pid_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("Threads:", 0) == 0) return std::stol(line.substr(8));
  return -1;
}

std::string probe_partition(const std::string& name) {
  PartitionBuilder partition(name);
  for (std::size_t i = 0; i < kContexts; ++i)
    partition.context("http://127.0.0.1:" + std::to_string(free_port()))
        .module("libdaqx_test_probe.so")
        .application("test::Probe", static_cast<std::uint32_t>(i + 1), static_cast<std::uint32_t>(i));
  return partition.xml();
}


Poco::JSON::Object::Ptr parse(const std::string& json) {
  Poco::JSON::Parser parser;
  return parser.parse(json).extract<Poco::JSON::Object::Ptr>();
}

}  // namespace

TEST_CASE("65 contexts are watched by daqx-launch --drive, its dashboard and daqxctl watch with a fixed number of "
          "threads, and each shows the totals per kind with the contexts that are fine folded", "[launch][dashboard]") {
  const std::string partition = write_file("launch-watching.xml", probe_partition("launch-watching"));
  LauncherProcess launcher({"--config", partition, "--drive", "--run", "300", "--log-dir",
                            scratch_directory() + "/launch-watching-logs", "--run-number", "5"});
  const std::string url = launcher.dashboard_url(std::chrono::seconds(60));
  INFO(last_lines(launcher.output(), 40));
  REQUIRE_FALSE(url.empty());
  const daqx::ControlClient dashboard(url, std::chrono::seconds(10));

  // Until every application is Enabled in run 5: the dashboard is watched from here on.
  Poco::JSON::Object::Ptr view;
  bool enabled = false;
  const auto deadline = Clock::now() + std::chrono::seconds(120);
  while (!enabled && Clock::now() < deadline && launcher.running()) {
    const daqx::HttpReply reply = dashboard.get("/api/partition");
    REQUIRE(reply.status == 200);
    view = parse(reply.body);
    const Poco::JSON::Array::Ptr kinds = view->getArray("kinds");
    enabled = view->getValue<std::uint64_t>("run") == 5 && kinds->size() == 1 &&
              kinds->getObject(0)->getObject("states")->optValue<std::size_t>("Enabled", 0) == kContexts;
    if (!enabled) std::this_thread::sleep_for(std::chrono::milliseconds(300));
  }
  REQUIRE(enabled);

  // The launcher polls for its table every second and for its dashboard while asked: threads read meanwhile,
  // across several rounds of both.
  long launcher_most = 0;
  for (int look = 0; look < 20 && launcher.running(); ++look) {
    CHECK(dashboard.get("/api/partition").status == 200);
    launcher_most = std::max(launcher_most, threads_of(launcher.pid()));
    std::this_thread::sleep_for(std::chrono::milliseconds(150));
  }
  CHECK(launcher_most > 0);
  CHECK(launcher_most <= kLauncherThreadBound);

  // The dashboard: the totals per kind, nothing needing attention, the 65 contexts folded.
  view = parse(dashboard.get("/api/partition").body);
  const Poco::JSON::Object::Ptr totals = view->getObject("totals");
  CHECK(totals->getValue<std::size_t>("contexts") == kContexts);
  CHECK(totals->getValue<std::size_t>("contexts_needing_attention") == 0);
  CHECK(view->getValue<std::string>("usual_state") == "Enabled");
  CHECK(view->getValue<std::size_t>("fold_above") < kContexts);
  CHECK(view->getArray("kinds")->getObject(0)->getValue<std::size_t>("applications") == kContexts);
  const daqx::HttpReply page = dashboard.get("/partition");
  REQUIRE(page.status == 200);
  CHECK_THAT(page.body, Catch::Contains("<details id=\"fine\" data-key=\"fine contexts\"><summary id=\"fine-count\">65 "
                                        "contexts fine: up, 65 applications Enabled, every connection up</summary>"));
  CHECK(page.body.find("<table id=\"kinds\">") < page.body.find("<h2>Contexts</h2>"));  // the totals first
  const std::string rendered = page.body.substr(0, page.body.find("<script>"));  // the script holds the same markup
  CHECK(rendered.find("id=\"problems\"") == std::string::npos);

  // daqxctl watch of the same partition: its threads while it refreshes, and its table folded.
  const std::string watch_log = scratch_directory() + "/launch-watching-daqxctl.log";
  const pid_t watch = start_process({tool_program("daqxctl"), "--config", partition, "--interval", "0.2", "--count",
                                     "15", "watch"}, watch_log);
  long watch_most = 0;
  int status = 0;
  bool ended = false;
  const auto watch_deadline = Clock::now() + std::chrono::seconds(60);
  while (!ended && Clock::now() < watch_deadline) {
    watch_most = std::max(watch_most, threads_of(watch));
    ended = waitpid(watch, &status, WNOHANG) == watch;
    if (!ended) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  if (!ended) reap_or_kill(watch, std::chrono::seconds(1));
  const std::string watched = read_text(watch_log);
  INFO(last_lines(watched, 20));
  REQUIRE(ended);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  CHECK(watch_most > 0);
  CHECK(watch_most <= kWatchThreadBound);
  CHECK_THAT(watched, Catch::Contains("partition test/probe (65)"));
  CHECK_THAT(watched, Catch::Contains("65 contexts answering with every connection up, and 65 units Enabled, not listed"));
  CHECK_THAT(watched, !Catch::Contains("test/probe/17"));  // a unit that is fine has no line of its own

  // The launcher's live table: the same folding.
  const std::string output = launcher.output();
  CHECK_THAT(output, Catch::Contains("test/probe (65)"));
  CHECK_THAT(output, Catch::Contains("65 units Enabled, not listed"));
  CHECK_THAT(output, !Catch::Contains("test/probe/17  "));

  launcher.end_run();
  REQUIRE(launcher.wait(std::chrono::seconds(120)) == 0);
}
