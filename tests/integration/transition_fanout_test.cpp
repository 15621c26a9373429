// Transitions of many real executives at once (docs/operations.md, "Transitions"): 64 contexts whose configure takes
// a second each driven by daqx-launch --drive, and a context stopped (SIGSTOP) in the middle of its configure named
// by daqxctl after its deadline while every other context of its phase completes the transition.
#include <catch2/catch.hpp>

#include <signal.h>

#include <future>
#include <iostream>
#include <memory>
#include <regex>
#include <thread>

#include "../support/executive_process.hpp"
#include "../support/launcher_process.hpp"
#include "../support/partition_builder.hpp"
#include "../support/process.hpp"

using namespace daqx::test;
using Catch::Contains;
using Clock = std::chrono::steady_clock;

namespace {

std::string url(std::uint16_t port) { return "http://127.0.0.1:" + std::to_string(port); }

// A lone nton::Receiver per context (no sender, transport or endpoint: light), whose configure takes `delay`.
void add_receiver(PartitionBuilder& partition, const std::string& context_url, std::uint32_t tid,
                  const std::string& delay) {
  ContextBuilder context = partition.context(context_url);
  context.module("libdaqx_nton.so");
  context.application("nton::Receiver", tid, tid).property("configureDelay", delay);
}

// The first line of `text` that holds `what`; empty when none does.
std::string line_with(const std::string& text, const std::string& what) {
  const std::size_t at = text.find(what);
  if (at == std::string::npos) return {};
  const std::size_t begin = text.rfind('\n', at);
  const std::size_t end = text.find('\n', at);
  return text.substr(begin == std::string::npos ? 0 : begin + 1,
                     (end == std::string::npos ? text.size() : end) - (begin == std::string::npos ? 0 : begin + 1));
}

std::string state_of(const ExecutiveProcess& executive, std::uint32_t tid) {
  const Poco::JSON::Object::Ptr application = executive.application(tid);
  return application ? application->getValue<std::string>("state") : std::string("(no answer)");
}

}  // namespace

TEST_CASE("daqx-launch --drive configures and enables 64 contexts whose configure takes a second each, the contexts "
          "of a phase at once",
          "[launch][transition][process]") {
  PartitionBuilder partition("fanout-64");
  for (std::uint32_t i = 1; i <= 64; ++i) add_receiver(partition, url(free_port()), i, "1");
  const std::string path = write_file("fanout-64.xml", partition.xml());
  LauncherProcess launcher({"--config", path, "--drive", "--run", "1", "--no-dashboard", "--log-dir",
                            scratch_directory() + "/fanout-64-logs"},
                           {"DAQX_MODULE_PATH=" + module_directory()});
  const std::optional<int> exit_code = launcher.wait(std::chrono::seconds(150));
  const std::string output = launcher.output();
  INFO(output);
  REQUIRE(exit_code == 0);
  // One phase (every context hosts the same class), every context done.
  const std::string configured = line_with(output, "daqx-launch: configure: ");
  CHECK_THAT(configured, Contains("configure: 64/64 contexts in ") && Contains(" s (1 phase)"));
  CHECK_THAT(output, Contains("daqx-launch: enable: 64/64 contexts in "));
  CHECK_THAT(output, Contains("daqx-launch: configured and enabled, run "));
  CHECK_THAT(output, Contains("daqx-launch: stop: 64/64 contexts in "));
  CHECK_THAT(output, Contains("daqx-launch: halt: 64/64 contexts in "));
  CHECK_THAT(output, Contains("all contexts stopped cleanly"));
  // Time is for the benchmark to judge, not this test: shown only.
  std::cout << "64 one-second configures, fan-out 32: " << configured << "\n";
}

TEST_CASE("a context stopped (SIGSTOP) during its configure is named after its deadline while every other context "
          "of its phase completes the transition, and the next phase is not asked",
          "[tools][transition][process]") {
  // Phase 1: eleven lone receivers, the fourth of which configures for 3 s and is stopped meanwhile. Phase 2: a
  // context with a sender too (another set of classes), which configure must not reach.
  constexpr std::size_t kPhaseOne = 11;
  constexpr std::size_t kStopped = 3;
  PartitionBuilder partition("fanout-sigstop");
  std::vector<std::string> urls;
  for (std::size_t i = 0; i < kPhaseOne; ++i) {
    urls.push_back(url(free_port()));
    add_receiver(partition, urls.back(), static_cast<std::uint32_t>(i + 1), i == kStopped ? "3" : "0");
  }
  urls.push_back(url(free_port()));
  ContextBuilder last = partition.context(urls.back());
  last.module("libdaqx_nton.so");
  last.application("nton::Receiver", 50, 50);
  last.application("nton::Sender", 60, 60).properties({{"receivers", "50", ""}});
  const std::string path = write_file("fanout-sigstop.xml", partition.xml());

  std::vector<std::unique_ptr<ExecutiveProcess>> executives;
  for (const std::string& context : urls) executives.push_back(std::make_unique<ExecutiveProcess>(path, context));
  for (const auto& executive : executives) REQUIRE(executive->wait_ready());
  ExecutiveProcess& stopped = *executives[kStopped];

  auto configure = std::async(std::launch::async, [&] {
    return run_process({tool_program("daqxctl"), "--config", path, "--timeout", "6", "configure"},
                       std::chrono::seconds(60));
  });
  // Stopped while its configure hook runs: a transition asked now is refused as busy with configure.
  bool configuring = false;
  const auto limit = Clock::now() + std::chrono::seconds(20);
  while (!configuring && Clock::now() < limit) {
    const daqx::HttpReply reply = stopped.post("/api/transition", R"({"command":"stop"})");
    configuring = reply.status == 409 && reply.body.find("busy: configure") != std::string::npos;
    if (!configuring) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  REQUIRE(configuring);
  REQUIRE(::kill(stopped.pid(), SIGSTOP) == 0);

  REQUIRE(configure.wait_for(std::chrono::seconds(60)) == std::future_status::ready);
  const ProcessResult result = configure.get();
  // Running again, it finishes the configure it was stopped in.
  ::kill(stopped.pid(), SIGCONT);
  INFO(result.output);
  CHECK(result.exit_code == 3);  // a context did not answer
  CHECK_THAT(result.output, Contains("daqxctl: " + urls[kStopped] + " configure: no answer within 6 s"));
  CHECK_THAT(result.output, Contains("configure: 10/12 contexts in ") &&
                                Contains(" s (2 phases, 1 without an answer, 1 not asked)"));
  CHECK_THAT(result.output,
             Contains("daqxctl: configure: not asked, as an earlier phase did not complete: 1 context (" + urls.back() + ")"));
  for (std::size_t i = 0; i < kPhaseOne; ++i) {
    if (i == kStopped) continue;
    INFO(urls[i]);
    CHECK_THAT(result.output, Contains(urls[i] + " configure done: " + std::to_string(i + 1) + ":Configured"));
    CHECK(state_of(*executives[i], static_cast<std::uint32_t>(i + 1)) == "Configured");
  }
  CHECK(state_of(*executives.back(), 50) == "Halted");
  const auto resumed = Clock::now() + std::chrono::seconds(20);
  while (state_of(stopped, kStopped + 1) != "Configured" && Clock::now() < resumed)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  CHECK(state_of(stopped, kStopped + 1) == "Configured");
}
