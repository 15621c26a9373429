// The partition dashboard and the executives' own pages in a real browser: Debian's Chromium, headless, driven over
// the DevTools protocol (support/devtools_client.*). Each test saves screenshots in build/<type>/test-output/browser/
// and prints their paths. Without Chromium a test is skipped, or fails where DAQX_TRANSPORT_REQUIRE=1 (CI).
#include <catch2/catch.hpp>

#include <csignal>
#include <iostream>
#include <memory>
#include <thread>

#include "../support/devtools_client.hpp"
#include "../support/evb_run.hpp"
#include "../support/executive_process.hpp"
#include "../support/partition_builder.hpp"
#include "../support/process.hpp"
#include "../support/transport_profile.hpp"

using namespace daqx::test;
using Clock = std::chrono::steady_clock;

namespace {

std::unique_ptr<Chromium> start_browser() {
  const std::string program = chromium_program();
  if (program.empty())
    skip_for_environment("DAQX_TRANSPORT_REQUIRE", 77,
                         "no /usr/bin/chromium (Debian's chromium package; or DAQX_CHROMIUM): the browser tests need it");
  return std::make_unique<Chromium>(program);
}

std::string shot(DevToolsPage& page, const std::string& name) {
  const std::string path = test_output_directory("browser") + "/" + name + ".png";
  page.screenshot(path);
  std::cout << "screenshot: " << path << std::endl;
  return path;
}

// Nothing the page said on its console or threw: the report names each.
void require_no_problems(DevToolsPage& page) {
  std::string report;
  for (const PageProblem& problem : page.problems()) report += problem.kind + ": " + problem.text + "\n";
  INFO(report);
  REQUIRE(report.empty());
}

// A selector's text in the page, or "(none)" when nothing matches it.
std::string selector_text(const std::string& selector) {
  return std::string("(document.querySelector('") + selector + "') || {textContent: '(none)'}).textContent";
}

bool is_rate(const std::string& text) { return !text.empty() && text != "-" && text != "(none)" && text != "0.0"; }

std::string wait_rate(DevToolsPage& page, const std::string& selector, std::chrono::seconds limit) {
  const auto deadline = Clock::now() + limit;
  std::string value;
  while (Clock::now() < deadline) {
    value = page.text(selector_text(selector));
    if (is_rate(value)) return value;
    page.drain(std::chrono::milliseconds(300));
  }
  return value;
}

}  // namespace

TEST_CASE("the partition page of a running event builder shows every unit live without console errors, the "
          "executive's own page too, a monitor's subscription to a BU's stream as a row of its own, and a killed "
          "context turns unreachable within seconds", "[browser]") {
  std::unique_ptr<Chromium> browser = start_browser();
  constexpr std::uint32_t kMonitor = 300;
  EvbRun run(transport_profile("tcp"), "dashboard-evb", 1, 2, {{"buTimeout", "2", ""}}, {}, {}, {},
             {{"evb::Monitor", kMonitor, 0,
               {{"publisher", std::to_string(bu(0)), "applications"}, {"policy", "sample:10", ""}}}});
  // The launcher's order (BUs, RUs, the EvM last), with a run number, as daqx-launch --drive does.
  for (std::uint32_t tid : run.tids()) REQUIRE(run.process(tid).transition("configure").status == 200);
  for (std::uint32_t tid : run.tids())
    REQUIRE(run.process(tid).post("/api/transition", R"({"command":"enable","run":7})").status == 200);
  const std::string evm = run.unit(kEvm).url();
  DevToolsPage page(*browser);
  page.navigate(evm + "/partition");
  REQUIRE(page.text("document.title") == "daqx partition dashboard-evb");

  // Rates need two answers of each context: the script's redraws bring them.
  const std::string bu_rate = wait_rate(page, "[data-tid=\"200\"] .events", std::chrono::seconds(30));
  INFO(page.text("document.getElementById('live').innerText"));
  REQUIRE(is_rate(bu_rate));
  CHECK(page.text(selector_text("[data-tid=\"200\"] .state")) == "Enabled");
  CHECK(page.text(selector_text("[data-tid=\"100\"] .state")) == "Enabled");
  CHECK(page.text(selector_text("[data-tid=\"10\"] .state")) == "Enabled");
  CHECK(is_rate(page.text(selector_text("[data-class=\"evb::BU\"] .events"))));
  CHECK(is_rate(page.text(selector_text("[data-class=\"evb::BU\"] .bytes"))));
  CHECK(page.text(selector_text("#run")) == "7");
  CHECK(page.text("document.querySelectorAll('section.context.status-up').length") == "5");

  // The monitor's subscription, drawn by the script: who, which policy, what it gets and what it skips.
  const std::string row = "#subscriptions tr.subscription[data-tid=\"200\"]";
  CHECK(is_rate(wait_rate(page, row + " .delivered", std::chrono::seconds(20))));
  CHECK(page.text(selector_text(row + " .subscriber")) == "tid " + std::to_string(kMonitor));
  CHECK(page.text(selector_text(row + " .policy")) == "sample:10");

  // Values change while the run goes, without a reload (the page's own object survives the redraws).
  page.text("window.daqxSamePage = true");
  const std::string updated = page.text(selector_text("#updated"));
  const std::string run_time = page.text(selector_text("#run-time"));
  page.drain(std::chrono::milliseconds(2500));
  CHECK(page.text(selector_text("#updated")) != updated);
  CHECK(page.text(selector_text("#run-time")) != run_time);
  CHECK(page.text("window.daqxSamePage") == "true");
  CHECK(page.text(selector_text("#connection")) == " live");
  shot(page, "partition-running");
  require_no_problems(page);

  // The executive's own page: live too, rates on the first screen, detail folded away.
  DevToolsPage own(*browser);
  own.navigate(run.unit(bu(0)).url() + "/");
  CHECK(own.text(selector_text("[data-tid=\"200\"] .state")) == "Enabled");
  CHECK(is_rate(wait_rate(own, "[data-tid=\"200\"] .events", std::chrono::seconds(20))));
  CHECK(own.text("document.querySelector('details[data-key=\"pools\"]').open") == "false");
  CHECK(own.text("document.querySelectorAll('#connections td.up').length") != "0");
  shot(own, "executive-running");
  own.navigate(run.unit(bu(0)).url() + "/app/200");
  CHECK(own.text(selector_text("#state")) == "Enabled");
  CHECK(is_rate(wait_rate(own, "#live .events", std::chrono::seconds(20))));
  CHECK(own.text("document.querySelector('tr[data-metric=\"events_built\"] .rate').textContent") != "-");
  shot(own, "application-running");
  require_no_problems(own);

  // A context killed: unreachable on the page within a few seconds, with the reason, the rest still live.
  const std::string killed = run.unit(bu(1)).url();
  const std::string status = selector_text("section.context[data-url=\"" + killed + "\"] .status");
  REQUIRE(page.text(status) == "up");
  run.process(bu(1)).kill_now();
  const auto killed_at = Clock::now();
  const std::string seen = page.wait_text(status, "unreachable", std::chrono::seconds(10));
  const double seconds = std::chrono::duration<double>(Clock::now() - killed_at).count();
  INFO("after " << seconds << " s: " << page.text("document.getElementById('live').innerText"));
  REQUIRE(seen == "unreachable");
  CHECK(page.text(selector_text("#problems")).find(killed) != std::string::npos);
  CHECK(page.text(selector_text("#contexts")) == "4 of 5 answering");
  shot(page, "partition-context-killed");
  require_no_problems(page);
}

TEST_CASE("a Failed application shows its reason on the partition page and on its executive's page, and the "
          "pages show states with scripts disabled", "[browser]") {
  std::unique_ptr<Chromium> browser = start_browser();
  const std::uint16_t good_port = free_port(), bad_port = free_port();
  const std::string good = std::string("http://127.0.0.1:") + std::to_string(good_port);
  const std::string bad = std::string("http://127.0.0.1:") + std::to_string(bad_port);
  PartitionBuilder failed("dashboard-failed");
  failed.context(good).module("libdaqx_test_probe.so").application("test::Probe", 1);
  failed.context(bad).module("libdaqx_test_probe.so").application("test::Probe", 2, 1).property("failIn", "configure");
  const std::string partition = write_file("dashboard-failed.xml", failed.xml());
  ExecutiveProcess first(partition, good);
  ExecutiveProcess second(partition, bad);
  REQUIRE(first.wait_ready());
  REQUIRE(second.wait_ready());
  REQUIRE(first.transition("configure").status == 200);
  REQUIRE(second.transition("configure").status == 422);

  DevToolsPage page(*browser);
  page.navigate(good + "/partition");
  CHECK(page.text(selector_text("[data-tid=\"2\"] .state")) == "Failed");
  CHECK(page.text("document.querySelector('[data-tid=\"2\"]').classList.contains('state-Failed')") == "true");
  CHECK_THAT(page.text(selector_text("[data-tid=\"2\"] .reason")), Catch::Contains("told to fail in configure"));
  CHECK(page.text(selector_text("#problems")).find("told to fail in configure") != std::string::npos);
  CHECK(page.text(selector_text("#failed")) == "1 Failed");
  CHECK(page.text(selector_text("[data-tid=\"1\"] .state")) == "Configured");
  page.drain(std::chrono::milliseconds(2500));  // redrawn by the script: still there
  CHECK_THAT(page.text(selector_text("[data-tid=\"2\"] .reason")), Catch::Contains("told to fail in configure"));
  shot(page, "partition-failed-application");
  require_no_problems(page);

  DevToolsPage own(*browser);
  own.navigate(bad + "/");
  CHECK(own.text(selector_text("[data-tid=\"2\"] .state")) == "Failed");
  CHECK(own.text(selector_text("#problems")).find("told to fail in configure") != std::string::npos);
  own.navigate(bad + "/app/2");
  CHECK(own.text(selector_text("#state")) == "Failed");
  CHECK_THAT(own.text(selector_text("#problems .reason")), Catch::Contains("told to fail in configure"));
  shot(own, "application-failed");
  require_no_problems(own);

  // Without JavaScript: the page as the server wrote it, states and the reason in it, nothing redrawn.
  DevToolsPage plain(*browser);
  plain.disable_scripts(true);
  plain.navigate(good + "/partition");
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));
  const std::string html = plain.document_html();
  INFO(html);
  CHECK(html.find("<td class=\"state state-Failed\">Failed</td>") != std::string::npos);
  CHECK(html.find("<td class=\"state state-Configured\">Configured</td>") != std::string::npos);
  CHECK(html.find("told to fail in configure") != std::string::npos);
  CHECK(html.find("<span id=\"connection\" class=\"muted\"></span>") != std::string::npos);  // the script never ran
  shot(plain, "partition-without-javascript");
  plain.navigate(bad + "/");
  CHECK(plain.document_html().find("told to fail in configure") != std::string::npos);
  shot(plain, "executive-without-javascript");
  require_no_problems(plain);
  CHECK(first.stop() == 0);
  CHECK(second.stop() == 0);
}

TEST_CASE("a partition page of more contexts than it lists shows the totals per kind first, then what needs "
          "attention, and folds the contexts that are fine into one line that opens to list them", "[browser]") {
  std::unique_ptr<Chromium> browser = start_browser();
  constexpr std::size_t kGood = 17;  // with the one that fails: past the page's fold (16 contexts)
  PartitionBuilder built("dashboard-folded");
  std::vector<std::string> urls;
  for (std::size_t i = 0; i <= kGood; ++i) {
    urls.push_back("http://127.0.0.1:" + std::to_string(free_port()));
    PropertiesBuilder probe = built.context(urls.back())
                                  .module("libdaqx_test_probe.so")
                                  .application("test::Probe", static_cast<std::uint32_t>(i + 1),
                                               static_cast<std::uint32_t>(i));
    if (i == kGood) probe.property("failIn", "configure");
  }
  const std::string partition = write_file("dashboard-folded.xml", built.xml());
  std::vector<std::unique_ptr<ExecutiveProcess>> executives;
  for (const std::string& url : urls) executives.push_back(std::make_unique<ExecutiveProcess>(partition, url));
  for (const auto& executive : executives) REQUIRE(executive->wait_ready());
  for (std::size_t i = 0; i < kGood; ++i) REQUIRE(executives[i]->transition("configure").status == 200);
  REQUIRE(executives.back()->transition("configure").status == 422);
  const std::string failed = urls.back();

  DevToolsPage page(*browser);
  page.navigate(urls.front() + "/partition");
  page.drain(std::chrono::milliseconds(2500));  // redrawn by the script at least once
  INFO(page.text("document.getElementById('live').innerText"));
  CHECK(page.text(selector_text("#fine-count")) ==
        std::to_string(kGood) + " contexts fine: up, " + std::to_string(kGood) + " applications Configured, every connection up");
  CHECK(page.text("document.getElementById('fine').open") == "false");
  // The totals, then what needs attention, then the context that needs it, outside the fold.
  CHECK(page.text("String(document.getElementById('kinds').compareDocumentPosition(document.getElementById('problems')) & 4)") == "4");
  CHECK(page.text(selector_text("#problems")).find("told to fail in configure") != std::string::npos);
  const std::string failed_section = "document.querySelector('section.context[data-url=\"" + failed + "\"]')";
  CHECK(page.text("String(" + failed_section + " !== null && " + failed_section + ".closest('#fine') === null)") == "true");
  CHECK(page.text("document.querySelectorAll('#fine section.context').length") == "0");  // drawn when opened
  shot(page, "partition-folded");

  // Opened by the reader: the fine contexts are listed from the next redraw on, and it stays open.
  page.text("document.getElementById('fine').open = true");
  page.drain(std::chrono::milliseconds(2500));
  CHECK(page.text("document.querySelectorAll('#fine section.context').length") == std::to_string(kGood));
  CHECK(page.text("document.getElementById('fine').open") == "true");
  shot(page, "partition-folded-opened");
  require_no_problems(page);

  // Without JavaScript the server's page holds the folded contexts, closed.
  DevToolsPage plain(*browser);
  plain.disable_scripts(true);
  plain.navigate(urls.front() + "/partition");
  const std::string html = plain.document_html();
  CHECK(html.find("<details id=\"fine\" data-key=\"fine contexts\">") != std::string::npos);
  CHECK(plain.text("document.querySelectorAll('#fine section.context').length") == std::to_string(kGood));
  require_no_problems(plain);
  for (const auto& executive : executives) CHECK(executive->stop() == 0);
}
