// An application built out of tree with find_package(daqx) is loaded and run by the installed executive.
#include <catch2/catch.hpp>

#include <filesystem>

#include "../support/executive_process.hpp"

using namespace daqx::test;

TEST_CASE("the installed executive loads and runs a module built out of tree", "[install][process]") {
  std::string prefix = std::string(DAQX_INSTALL_TEST_DIR) + "/prefix";
  std::string module = std::string(DAQX_INSTALL_TEST_DIR) + "/build/libdemo_counter.so";
  REQUIRE(std::filesystem::exists(prefix + "/bin/daqx-executive"));
  REQUIRE(std::filesystem::exists(module));
  std::uint16_t port = free_port();
  std::string url = "http://localhost:" + std::to_string(port);
  std::string partition = write_file("out-of-tree.xml",
                                     "<Partition name=\"out-of-tree\">\n  <Context url=\"" + url + "\">\n"
                                     "    <Module path=\"" + module + "\"/>\n"
                                     "    <Application class=\"demo::Counter\" id=\"1\"><Properties><peers>2</peers>"
                                     "<count>500</count></Properties></Application>\n"
                                     "    <Application class=\"demo::Counter\" id=\"2\" instance=\"1\"><Properties>"
                                     "<peers>1</peers><count>300</count></Properties></Application>\n"
                                     "  </Context>\n</Partition>\n");
  ExecutiveProcess executive(partition, url, {}, prefix + "/bin/daqx-executive");
  REQUIRE(executive.wait_ready());
  REQUIRE(executive.transition("configure").status == 200);
  REQUIRE(executive.transition("enable").status == 200);
  CHECK(executive.wait_metric(2, "counted_frames", 500));
  CHECK(executive.wait_metric(1, "counted_frames", 300));
  INFO(executive.output());
  CHECK(executive.metric(2, "counted_frames") == 500);
  CHECK(executive.metric(2, "counted_bytes") == 500 * 8);
  CHECK(executive.metric(1, "counted_frames") == 300);
  CHECK(executive.stop() == 0);
}
