// daqx-launch's plan before start against a host's ephemeral port range, a setting of each network namespace:
// inside a namespace whose range is narrowed over a context's ports, --plan and a launch are refused, naming the
// context, the port and the range, and nothing is started. Skipped (exit code 77) where namespaces are unavailable.
#include <catch2/catch.hpp>

#include <filesystem>
#include <string>
#include <vector>

#include "../support/executive_process.hpp"
#include "../support/netns.hpp"
#include "../support/partition_builder.hpp"
#include "../support/process.hpp"
#include "../support/process_table.hpp"

using namespace daqx::test;
using Catch::Contains;
using namespace std::chrono_literals;

TEST_CASE("daqx-launch in a host whose ephemeral port range holds a context's listening ports refuses the "
          "partition before anything starts, naming the context and the range",
          "[netns]") {
  skip_test_unless_netns_available();
  VirtualCluster cluster(1);
  // Each namespace has every port free. The receivers listen at 29400 (control) and 29401 (data), the senders
  // at 29000 and 29001.
  PartitionBuilder partition("plan-ports");
  ContextBuilder receivers = partition.context(cluster.url(0, 29400));
  receivers.endpoint("tcp", cluster.address(0), 29401, "data");
  receivers.module("libdaqx_pttcp.so").module("libdaqx_nton.so");
  receivers.application("nton::Receiver", 20, 0, "data");
  ContextBuilder senders = partition.context(cluster.url(0, 29000));
  senders.endpoint("tcp", cluster.address(0), 29001, "data");
  senders.module("libdaqx_pttcp.so").module("libdaqx_nton.so");
  senders.application("nton::Sender", 10, 0, "data").property("receivers", "20");
  const std::string path = write_file("plan-ports.xml", partition.xml());
  const std::string logs = scratch_directory() + "/plan-ports-logs";
  std::filesystem::remove_all(logs);
  const auto launch = [&](const std::vector<std::string>& arguments) {
    std::vector<std::string> argv{"env", "DAQX_MODULE_PATH=" + module_directory(), tool_program("daqx-launch"),
                                  "--config", path, "--executive", executive_program(), "--no-dashboard",
                                  "--log-dir", logs};
    argv.insert(argv.end(), arguments.begin(), arguments.end());
    return cluster.run(0, argv, 60s);
  };

  // The namespace's own range (32768-60999 unless the machine says otherwise) is clear of these ports.
  const ProcessResult clear = launch({"--plan"});
  INFO(clear.output);
  REQUIRE(clear.exit_code == 0);
  CHECK_THAT(clear.output, Contains("the partition fits its hosts"));

  const ProcessResult narrowed =
      cluster.run(0, {"sh", "-c", "echo '29350 29449' > /proc/sys/net/ipv4/ip_local_port_range"});
  INFO(narrowed.output);
  REQUIRE(narrowed.exit_code == 0);
  REQUIRE(read_text("/proc/sys/net/ipv4/ip_local_port_range").find("29350") == std::string::npos);  // this one's own

  const ProcessResult plan = launch({"--plan"});
  INFO(plan.output);
  CHECK(plan.exit_code == 2);
  CHECK_THAT(plan.output, Contains("does not fit: context " + cluster.url(0, 29400) + ": listening port: needs port 29400"));
  CHECK_THAT(plan.output, Contains("does not fit: context " + cluster.url(0, 29400) + ": listening port: needs port 29401"));
  CHECK_THAT(plan.output, Contains("inside the ephemeral port range 29350-29449 (net.ipv4.ip_local_port_range)"));
  CHECK_THAT(plan.output, !Contains("context " + cluster.url(0, 29000) + ": listening port"));

  const ProcessResult refused = launch({"--drive", "--run", "5"});
  INFO(refused.output);
  CHECK(refused.exit_code == 2);
  CHECK_THAT(refused.output, Contains("daqx-launch: context " + cluster.url(0, 29400) + ": listening port: needs port 29400"));
  CHECK_THAT(refused.output, Contains("nothing started"));
  CHECK_FALSE(std::filesystem::exists(logs));
  CHECK(processes_with_argument(path).empty());
}
