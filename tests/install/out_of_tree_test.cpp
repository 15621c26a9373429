// The guide's application (docs/writing-an-application.md, docs/examples/counter) built out of tree against an
// installed and then moved daqx (run_install_test.cmake), run as the guide says: the installed daqx-executive
// with the example's partition, driven by the installed daqxctl, with no LD_LIBRARY_PATH or DAQX_MODULE_PATH.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>

#include <unistd.h>

#include "../support/executive_process.hpp"
#include "../support/process.hpp"

using namespace daqx::test;

namespace {

const std::string kPrefix = std::string(DAQX_INSTALL_TEST_DIR) + "/moved/daqx";
const std::string kExample = std::string(DAQX_INSTALL_TEST_DIR) + "/counter";

// An installed program, run to its end, from the example's folder (where the guide runs them).
ProcessResult installed(const std::string& program, std::vector<std::string> args) {
  args.insert(args.begin(), kPrefix + "/bin/" + program);
  return run_process(args, std::chrono::seconds(60));
}

// The example's partition with its ports replaced by free ones, beside the original (its module path is relative
// to the partition's folder).
std::string partition_on_free_ports() {
  std::string text = read_text(kExample + "/counter.xml");
  for (const char* port : {"29300", "29301", "29310", "29311"})
    text = std::regex_replace(text, std::regex(port), std::to_string(free_port()));
  const std::string path = kExample + "/counter-" + std::to_string(getpid()) + ".xml";
  std::ofstream(path) << text;
  return path;
}

std::vector<std::string> context_urls(const std::string& partition) {
  const std::string text = read_text(partition);
  std::vector<std::string> urls;
  const std::regex url("<Context url=\"([^\"]+)\"");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), url); it != std::sregex_iterator(); ++it)
    urls.push_back((*it)[1]);
  return urls;
}

}  // namespace

TEST_CASE("the guide's module, built against a moved install, runs in the installed executive",
          "[install][process]") {
  unsetenv("LD_LIBRARY_PATH");
  unsetenv("DAQX_MODULE_PATH");
  REQUIRE(std::filesystem::exists(kPrefix + "/bin/daqx-executive"));
  REQUIRE(std::filesystem::exists(kExample + "/build/libdemo_counter.so"));
  REQUIRE(chdir(kExample.c_str()) == 0);

  // The module's parameters, as the guide shows them; a bare transport name resolves inside the install.
  ProcessResult listed = installed("daqx-executive", {"--list-params", "build/libdemo_counter.so"});
  INFO(listed.output);
  REQUIRE(listed.exit_code == 0);
  CHECK(listed.output.find("application demo::Counter") != std::string::npos);
  CHECK(listed.output.find("  peers (applications") != std::string::npos);
  CHECK(listed.output.find("  count (unsigned") != std::string::npos);
  ProcessResult transport = installed("daqx-executive", {"--list-params", "libdaqx_pttcp.so"});
  INFO(transport.output);
  REQUIRE(transport.exit_code == 0);
  CHECK(transport.output.find(std::string("(").append(kPrefix).append("/lib/daqx/libdaqx_pttcp.so)")) != std::string::npos);

  const std::string partition = partition_on_free_ports();
  const std::vector<std::string> urls = context_urls(partition);
  REQUIRE(urls.size() == 2);
  ExecutiveProcess first(partition, urls[0], {}, kPrefix + "/bin/daqx-executive");
  ExecutiveProcess second(partition, urls[1], {}, kPrefix + "/bin/daqx-executive");
  INFO(first.output() + second.output());
  REQUIRE(first.wait_ready());
  REQUIRE(second.wait_ready());

  const auto daqxctl = [&](const std::string& command) {
    ProcessResult result = installed("daqxctl", {"--config", partition, command});
    INFO("daqxctl " << command << ": " << outcome(result) << "\n" << result.output);
    CHECK(result.exit_code == 0);
    return result.output;
  };
  daqxctl("configure");
  CHECK(daqxctl("status").find("Configured") != std::string::npos);
  daqxctl("enable");
  // Application 1 sends 500 frames of 8 bytes to 2, which sends 300 to 1, across the two executives over pttcp.
  CHECK(second.wait_metric(2, "counted_frames", 500));
  CHECK(first.wait_metric(1, "counted_frames", 300));
  CHECK(first.metric(1, "sent_frames") == 500);
  CHECK(second.metric(2, "sent_frames") == 300);
  CHECK(second.metric(2, "counted_bytes") == 500 * 8);
  daqxctl("stop");
  daqxctl("halt");
  CHECK(daqxctl("status").find("Halted") != std::string::npos);
  CHECK(second.metric(2, "counted_frames") == 500);
  CHECK(first.metric(1, "counted_frames") == 300);
  CHECK(first.stop() == 0);
  CHECK(second.stop() == 0);
  std::filesystem::remove(partition);
}

TEST_CASE("an executive of the build tree finds the tree's modules with no DAQX_MODULE_PATH", "[install][process]") {
  unsetenv("DAQX_MODULE_PATH");
  const std::chrono::seconds limit(60);
  ProcessResult listed = run_process({executive_program(), "--list-params", "libdaqx_pttcp.so"}, limit);
  INFO(listed.output);
  REQUIRE(listed.exit_code == 0);
  CHECK(listed.output.find(std::string("(").append(module_directory()).append("/libdaqx_pttcp.so)")) != std::string::npos);
  // A name no folder has: the error names every folder searched, the build tree's among them.
  ProcessResult missing = run_process({executive_program(), "--list-params", "libdaqx_nothing.so"}, limit);
  INFO(missing.output);
  CHECK(missing.exit_code == 2);
  CHECK(missing.output.find(module_directory()) != std::string::npos);
}
