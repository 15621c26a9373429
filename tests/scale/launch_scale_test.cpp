// The launcher at the size CMS runs: a 128 RU x 128 BU event builder (257 contexts, one executive each) from the
// generator users run, brought up, configured, enabled, stopped and halted by `daqx-launch --drive` on this
// machine, with every event's content checked. Release build only: 257 sanitized executives do not fit in memory.
#include <catch2/catch.hpp>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <pugixml.hpp>

#include <chrono>
#include <cstdint>
#include <string>
#include <thread>

#include "../support/executive_process.hpp"
#include "../support/launcher_process.hpp"
#include "../support/process.hpp"

using namespace daqx::test;
using namespace std::chrono_literals;

namespace {

constexpr int kUnits = 128;  // RUs, and BUs
constexpr std::uint32_t kEvmId = 10;

// The generator's ports on one host: context k listens for control on base + 10k and for data on base + 10k + 1.
constexpr int kPortStep = 10;

// True when a listening socket could bind every port the generator gives `contexts` contexts from `base` on
// 127.0.0.1: nothing listens there. SO_REUSEADDR, as the executives bind: connections of earlier runs left in
// TIME_WAIT do not hold a port.
bool ports_free(std::uint16_t base, int contexts) {
  for (int k = 0; k < contexts; ++k)
    for (int offset : {0, 1}) {
      const int fd = socket(AF_INET, SOCK_STREAM, 0);
      const int reuse = 1;
      setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &reuse, sizeof reuse);
      sockaddr_in address{};
      address.sin_family = AF_INET;
      address.sin_port = htons(static_cast<std::uint16_t>(base + kPortStep * k + offset));
      address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      const bool bound = bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0;
      close(fd);
      if (!bound) return false;
    }
  return true;
}

// A base port whose contexts all lie below the ephemeral range (the partition's own connections take their
// source ports there), where this test's pid puts it, moved on while one of the ports is taken.
std::uint16_t port_base(int contexts) {
  const int span = kPortStep * contexts;
  const int slots = (32000 - 10000) / span;
  for (int attempt = 0; attempt < slots; ++attempt) {
    const auto base = static_cast<std::uint16_t>(10000 + ((getpid() + attempt) % slots) * span);
    if (ports_free(base, contexts)) return base;
  }
  FAIL("no free ports for " << contexts << " contexts between 10000 and 32000");
  return 0;
}

// The EvM's control URL, from the partition the generator wrote.
std::string evm_url(const std::string& partition) {
  pugi::xml_document document;
  REQUIRE(document.load_file(partition.c_str()));
  for (const pugi::xml_node context : document.child("Partition").children("Context"))
    for (const pugi::xml_node application : context.children("Application"))
      if (std::string(application.attribute("class").value()) == "evb::EvM") return context.attribute("url").value();
  FAIL("no evb::EvM in " << partition);
  return {};
}

}  // namespace

TEST_CASE("daqx-launch --drive brings up a 128x128 event builder (257 contexts) from the generator, enables, "
          "stops and halts it, every event checked", "[launch][scale]") {
  const std::string partition = scratch_directory() + "/evb-128x128.xml";
  const std::uint16_t base = port_base(2 * kUnits + 1);
  // A low rate (this is about how many, not how fast) and generous unit timeouts: 257 executives on two busy
  // cores answer heartbeats late, and the BUs' reports of events built reach the EvM seconds after the events
  // (a CI run lost 3984 events at the default 5 s drain, every one of them built). Every fragment carries a
  // pattern and a CRC that the BUs check.
  const ProcessResult generated = run_process(
      {"/usr/bin/env", "python3", config_directory() + "/../apps/evb/tools/evb_partition.py", "--rus",
       std::to_string(kUnits), "--bus", std::to_string(kUnits), "--base-port", std::to_string(base), "--trigger-rate",
       "300", "--fragment-size", "256", "--check-data", "true", "--pattern", "true", "--bu-timeout", "60",
       "--ru-timeout", "60", "--evm-timeout", "60", "--drain-timeout", "45", "--name", "evb-128x128", "-o", partition},
      30s);
  INFO(generated.output);
  REQUIRE(generated.exit_code == 0);
  const std::string evm = evm_url(partition);
  const std::string logs = scratch_directory() + "/launch-128x128-logs";
  LauncherProcess launcher({"--config", partition, "--drive", "--run", "600", "--ready-timeout", "120", "--log-dir",
                            logs});
  // Progress, not time: once the EvM has completed events that went through every BU, the run ends in order.
  const auto deadline = std::chrono::steady_clock::now() + 300s;
  while (!(application_metric(evm, kEvmId, "events_completed") >= 3 * kUnits) && launcher.running() &&
         std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(500ms);
  launcher.end_run();
  const std::optional<int> exit_code = launcher.wait(300s);
  const std::string output = launcher.output();
  INFO(output.substr(0, 4000) << "\n...\n" << output.substr(output.size() > 6000 ? output.size() - 6000 : 0));
  REQUIRE(exit_code.has_value());
  CHECK(*exit_code == 0);
  CHECK_THAT(output, Catch::Contains("257 contexts of partition 'evb-128x128' up"));
  CHECK_THAT(output, Catch::Contains("configured and enabled"));
  CHECK_THAT(output, Catch::Contains("all contexts stopped cleanly"));
  // Every event assigned was built once, by one of the BUs, checked and complete; none lost.
  const double assigned = launcher.summary_counter("evb/evm/0", "events_assigned");
  CHECK(assigned >= 3 * kUnits);
  CHECK(launcher.summary_counter("evb/evm/0", "events_completed") == assigned);
  CHECK(launcher.summary_counter("evb/evm/0", "events_lost") == 0);
  double built = 0;
  for (int b = 0; b < kUnits; ++b) {
    const std::string bu = "evb/bu/" + std::to_string(b);
    INFO(bu);
    built += launcher.summary_counter(bu, "events_built");
    CHECK(launcher.summary_counter(bu, "events_corrupt") == 0);
    CHECK(launcher.summary_counter(bu, "events_incomplete") == 0);
    CHECK(launcher.summary_counter(bu, "duplicate_pieces") == 0);
  }
  CHECK(built == assigned);
  for (int r = 0; r < kUnits; ++r) {
    const std::string ru = "evb/ru/" + std::to_string(r);
    INFO(ru);
    CHECK(launcher.summary_counter(ru, "send_errors") == 0);
  }
}
