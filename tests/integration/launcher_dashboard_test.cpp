// daqx-launch serves the partition's live page and JSON while it runs a partition (docs/operations.md).
#include <catch2/catch.hpp>

#include <Poco/JSON/Parser.h>

#include <regex>
#include <thread>

#include "../support/executive_process.hpp"
#include "../support/launcher_process.hpp"
#include "../support/partition_builder.hpp"
#include "../support/process.hpp"

using namespace daqx::test;
using Clock = std::chrono::steady_clock;

namespace {

// An event builder of one BU, one RU and the EvM, each its own context, over TCP on free ports.
std::string evb_partition(const std::string& name) {
  PartitionBuilder partition(name);
  for (const auto& [cls, tid] : std::vector<std::pair<std::string, std::uint32_t>>{{"evb::BU", 200}, {"evb::RU", 100}, {"evb::EvM", 10}}) {
    ContextBuilder context = partition.context("http://127.0.0.1:" + std::to_string(free_port()));
    context.endpoint("tcp", "127.0.0.1", free_port(), "data");
    context.module("libdaqx_pttcp.so").module("libdaqx_evb.so");
    context.application(cls, tid, 0, "data");
  }
  return partition.xml();
}


}  // namespace

TEST_CASE("daqx-launch serves the partition's page and JSON on the address it prints while it runs the partition, "
          "and stops serving with it", "[launch][dashboard]") {
  const std::string partition = write_file("launch-dashboard.xml", evb_partition("launch-dashboard"));
  LauncherProcess launcher({"--config", partition, "--drive", "--run", "60", "--log-dir",
                            scratch_directory() + "/launch-dashboard-logs", "--run-number", "42"});
  const std::string url = launcher.dashboard_url(std::chrono::seconds(60));
  INFO(launcher.output());
  REQUIRE_FALSE(url.empty());
  const daqx::ControlClient dashboard(url, std::chrono::seconds(10));

  // Polled until every context answers in run 42 with the event builder's rates known.
  Poco::JSON::Object::Ptr view;
  bool running = false;
  const auto deadline = Clock::now() + std::chrono::seconds(60);
  while (!running && Clock::now() < deadline && launcher.running()) {
    const daqx::HttpReply reply = dashboard.get("/api/partition");
    REQUIRE(reply.status == 200);
    Poco::JSON::Parser parser;
    view = parser.parse(reply.body).extract<Poco::JSON::Object::Ptr>();
    const Poco::JSON::Object::Ptr totals = view->getObject("totals");
    running = view->getValue<std::uint64_t>("run") == 42 && totals->getValue<int>("contexts") == 3 &&
              totals->getValue<int>("contexts_unreachable") == 0;
    if (running) {
      const Poco::JSON::Array::Ptr kinds = view->getArray("kinds");
      for (std::size_t k = 0; k < kinds->size(); ++k)
        if (kinds->getObject(static_cast<unsigned>(k))->isNull("events_per_second")) running = false;
    }
    if (!running) std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  REQUIRE(view);
  INFO(view->getArray("contexts")->size());
  REQUIRE(running);
  CHECK(view->getValue<std::string>("partition") == "launch-dashboard");

  const daqx::HttpReply page = dashboard.get("/partition");
  CHECK(page.status == 200);
  CHECK_THAT(page.body, Catch::Contains("<title>daqx partition launch-dashboard</title>"));
  CHECK_THAT(page.body, Catch::Contains("state-Enabled"));
  CHECK(dashboard.get("/").status == 302);  // to /partition
  CHECK(dashboard.get("/api/applications").status == 404);  // the dashboard has no control routes
  CHECK(dashboard.post("/api/partition", "{}").status == 405);

  launcher.end_run();  // all that was asked while it runs is answered: its --run is only a bound
  REQUIRE(launcher.wait(std::chrono::seconds(120)) == 0);
  CHECK_FALSE(dashboard.get("/api/partition").answered());
}

TEST_CASE("daqx-launch refuses a --dashboard that is not [HOST:]PORT and serves none with --no-dashboard",
          "[launch][dashboard]") {
  const std::string partition = write_file("launch-no-dashboard.xml", evb_partition("launch-no-dashboard"));
  for (const char* wrong : {"nonsense", "127.0.0.1:", "127.0.0.1:70000", ":-1"}) {
    const ProcessResult refused =
        run_process({tool_program("daqx-launch"), "--config", partition, "--dashboard", wrong}, std::chrono::seconds(30));
    INFO(wrong << ": " << refused.output);
    CHECK(refused.exit_code == 2);
    CHECK_THAT(refused.output, Catch::Contains("is not [HOST:]PORT"));
  }
  LauncherProcess launcher({"--config", partition, "--run", "2", "--no-dashboard", "--log-dir",
                            scratch_directory() + "/launch-no-dashboard-logs"});
  REQUIRE(launcher.wait(std::chrono::seconds(120)) == 0);
  CHECK_THAT(launcher.output(), !Catch::Contains("daqx-launch: dashboard:"));
}
