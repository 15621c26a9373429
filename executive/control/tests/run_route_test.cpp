// Run numbers in the control API: what an enable may carry, what is refused with 400, and where the run shows.
#include <catch2/catch.hpp>

#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "daqx/control/control_client.hpp"
#include "daqx/control/control_server.hpp"

using Catch::Matchers::Contains;

namespace {

// One application; remembers the run each command was given and reports it as the executive does.
class RunModel : public daqx::ControlModel {
 public:
  std::string context_url() const override { return "http://127.0.0.1:1"; }
  std::string partition_name() const override { return "runs"; }
  std::vector<daqx::ApplicationStatus> applications() const override { return {*application(1)}; }
  std::optional<daqx::ApplicationStatus> application(daqx::Tid tid) const override {
    if (tid != 1) return std::nullopt;
    std::lock_guard lock(mutex_);
    daqx::ApplicationStatus status;
    status.tid = 1;
    status.class_name = "test::App";
    status.name = "test/app/0";
    status.state = run_ != 0 ? daqx::State::enabled : daqx::State::configured;
    status.run = run_;
    return status;
  }
  daqx::TransitionResult transition(std::optional<daqx::Tid> tid, daqx::Command command) override {
    return run_transition(tid, command, 0);
  }
  daqx::TransitionResult run_transition(std::optional<daqx::Tid>, daqx::Command command, std::uint64_t run) override {
    std::lock_guard lock(mutex_);
    given_.push_back(run);
    run_ = command == daqx::Command::enable ? run : 0;
    daqx::TransitionResult result;
    result.ok = true;
    return result;
  }
  std::uint64_t run_number() const override {
    std::lock_guard lock(mutex_);
    return run_;
  }
  std::string set_parameter(daqx::Tid, const std::string&, const std::string&) override { return "no"; }
  std::vector<daqx::PoolStatus> pools() const override { return {}; }
  std::vector<daqx::ThreadStatus> threads() const override { return {}; }
  std::vector<daqx::TransportStatus> transports() const override { return {}; }
  std::vector<daqx::Metric> executive_metrics() const override { return {}; }

  std::vector<std::uint64_t> given() const {
    std::lock_guard lock(mutex_);
    return given_;
  }

 private:
  mutable std::mutex mutex_;
  std::uint64_t run_ = 0;
  std::vector<std::uint64_t> given_;
};

struct Served {
  RunModel model;
  daqx::ControlServer server{model, "127.0.0.1", 0};
  std::optional<daqx::ControlClient> client;
  Served() {
    server.start();
    client.emplace("http://127.0.0.1:" + std::to_string(server.port()));
  }
};

}  // namespace

TEST_CASE("an enable carries its run number to the executive, for the context or one application", "[run_number]") {
  Served served;
  CHECK(served.client->post("/api/transition", R"({"command":"enable","run":1234})").status == 200);
  CHECK(served.client->post("/api/applications/1/transition", R"({"command":"enable","run":9007199254740991})")
            .status == 200);
  CHECK(served.client->post("/api/transition", R"({"command":"enable"})").status == 200);
  CHECK(served.client->post("/api/transition", R"({"command":"enable","run":null})").status == 200);
  CHECK(served.model.given() == std::vector<std::uint64_t>{1234, 9007199254740991ull, 0, 0});
}

TEST_CASE("a run number that is not a whole number from 1 to 2^53-1 is refused with 400 and says why",
          "[run_number]") {
  Served served;
  for (const std::string run : {"0", "-1", "12.5", "\"1234\"", "true", "9007199254740992", "18446744073709551616",
                                "[1]", "{}"}) {
    INFO("run " << run);
    const daqx::HttpReply reply = served.client->post("/api/transition", R"({"command":"enable","run":)" + run + "}");
    CHECK(reply.status == 400);
    CHECK_THAT(reply.body, Contains("\\\"run\\\" must be a whole number from 1 to 9007199254740991"));
  }
  const daqx::HttpReply stop = served.client->post("/api/transition", R"({"command":"stop","run":5})");
  CHECK(stop.status == 400);
  CHECK_THAT(stop.body, Contains("goes with enable only"));
  CHECK(served.model.given().empty());  // nothing reached the executive
}

TEST_CASE("the run shows in /api/executive, every application's JSON and /metrics as daqx_run_number",
          "[run_number]") {
  Served served;
  CHECK_THAT(served.client->get("/api/executive").body, Contains(R"("run":0)"));
  CHECK_THAT(served.client->get("/metrics").body, Contains("\ndaqx_run_number 0\n"));
  REQUIRE(served.client->post("/api/transition", R"({"command":"enable","run":4321})").status == 200);
  CHECK_THAT(served.client->get("/api/executive").body, Contains(R"("run":4321)"));
  CHECK_THAT(served.client->get("/api/applications/1").body, Contains(R"("run":4321)"));
  CHECK_THAT(served.client->get("/api/applications").body, Contains(R"("run":4321)"));
  const std::string metrics = served.client->get("/metrics").body;
  CHECK_THAT(metrics, Contains("# TYPE daqx_run_number gauge\ndaqx_run_number 4321\n"));
}
