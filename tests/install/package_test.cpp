// The Debian package, installed into a throwaway dpkg root by run_package_test.cmake: its daqx-executive plays a
// one-context partition (modules by bare name, found in the package's own lib/daqx), driven by its daqxctl.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "../support/executive_process.hpp"
#include "../support/partition_builder.hpp"
#include "../support/process.hpp"

using namespace daqx::test;

TEST_CASE("the Debian package's executive runs a partition, driven by its daqxctl", "[install][process]") {
  unsetenv("LD_LIBRARY_PATH");
  unsetenv("DAQX_MODULE_PATH");
  const std::string bin = std::string(DAQX_PACKAGE_TEST_DIR) + "/root/usr/bin";
  REQUIRE(std::filesystem::exists(bin + "/daqx-executive"));
  const std::uint16_t port = free_port();
  const std::string url = "http://127.0.0.1:" + std::to_string(port);
  PartitionBuilder package("package");
  ContextBuilder context = package.context(url);
  context.module("libdaqx_nton.so");
  context.application("nton::Receiver", 21);
  context.application("nton::Sender", 11).properties(
      {{"receivers", "21", ""}, {"frameSize", "4096", ""}, {"frameCount", "5000", ""}});
  const std::string partition = write_file("package.xml", package.xml());
  ExecutiveProcess executive(partition, url, {}, bin + "/daqx-executive");
  INFO(executive.output());
  REQUIRE(executive.wait_ready());
  const auto daqxctl = [&](const std::string& command) {
    ProcessResult result = run_process({bin + "/daqxctl", "--config", partition, command}, std::chrono::seconds(60));
    INFO("daqxctl " << command << ": " << outcome(result) << "\n" << result.output);
    CHECK(result.exit_code == 0);
    return result.output;
  };
  daqxctl("configure");
  daqxctl("enable");
  CHECK(executive.wait_metric(21, "frames_received", 5000));
  CHECK(daqxctl("status").find("Enabled") != std::string::npos);
  daqxctl("stop");
  daqxctl("halt");
  CHECK(executive.metric(21, "frames_received") == 5000);
  CHECK(executive.stop() == 0);
}
