// daqx-launch's plan before start against this machine's limits: printed with --plan (exit 0 when the partition
// fits, 2 when it does not), and a launch that does not fit refused before anything starts, naming the context,
// the resource and the limit.
#include <catch2/catch.hpp>

#include <filesystem>
#include <string>
#include <vector>

#include "../support/executive_process.hpp"
#include "../support/partition_builder.hpp"
#include "../support/process.hpp"
#include "../support/process_table.hpp"

using namespace daqx::test;
using Catch::Contains;

namespace {

std::string url(std::uint16_t port) { return "http://127.0.0.1:" + std::to_string(port); }

// An event builder of 2 RUs and 2 BUs and the EvM over pttcp, each in a context of its own: the EvM plans 4
// connections each way, 8 descriptors and the executive's 256 (resource_plan_test has the rule).
std::string event_builder(const std::string& name, std::uint16_t& evm_port) {
  PartitionBuilder partition(name);
  evm_port = free_port();
  std::uint16_t control = evm_port;
  const auto unit = [&](const std::string& cls, std::uint32_t tid, std::uint32_t instance) {
    ContextBuilder context = partition.context(url(control));
    context.endpoint("tcp", "127.0.0.1", free_port(), "data");
    context.module("libdaqx_pttcp.so").module("libdaqx_evb.so");
    context.application(cls, tid, instance, "data");
    control = free_port();
  };
  unit("evb::EvM", 10, 0);
  for (std::uint32_t i = 0; i < 2; ++i) unit("evb::RU", 100 + i, i);
  for (std::uint32_t j = 0; j < 2; ++j) unit("evb::BU", 200 + j, j);
  return write_file(name + ".xml", partition.xml());
}

ProcessResult launch(const std::string& open_files, const std::vector<std::string>& arguments) {
  std::vector<std::string> argv{"/usr/bin/prlimit", "--nofile=" + open_files, tool_program("daqx-launch"),
                                "--executive", executive_program(), "--no-dashboard"};
  argv.insert(argv.end(), arguments.begin(), arguments.end());
  return run_process(argv, std::chrono::seconds(60), {"DAQX_MODULE_PATH=" + module_directory()});
}

}  // namespace

TEST_CASE("daqx-launch --plan: a partition within the open files of this machine fits (exit 0), one past them is "
          "refused (exit 2) naming the context, its need and the limit") {
  std::uint16_t evm = 0;
  const std::string path = event_builder("plan-open-files", evm);
  const ProcessResult roomy = launch("1024", {"--config", path, "--plan"});
  INFO(roomy.output);
  CHECK(roomy.exit_code == 0);
  CHECK_THAT(roomy.output, Contains("total (5 contexts)"));
  CHECK_THAT(roomy.output, Contains(url(evm) + "      4      4     264"));
  CHECK_THAT(roomy.output, Contains("open files 1024"));
  CHECK_THAT(roomy.output, Contains("the partition fits its hosts"));
  // Hard limit 263: the launcher (and every executive) raises its soft limit to that, one short of the EvM's need.
  const ProcessResult tight = launch("64:263", {"--config", path, "--plan"});
  INFO(tight.output);
  CHECK(tight.exit_code == 2);
  CHECK_THAT(tight.output, Contains("does not fit: context " + url(evm) +
                                    ": open files: needs about 264 descriptors, host 127.0.0.1"));
  CHECK_THAT(tight.output, Contains("allows 263 (hard RLIMIT_NOFILE)"));
  CHECK_THAT(tight.output, Contains("the partition does not fit its hosts"));
}

TEST_CASE("daqx-launch: a partition past this machine's open files is refused before anything starts: exit 2, the "
          "context and the limit named, no executive, no log") {
  std::uint16_t evm = 0;
  const std::string path = event_builder("refused-open-files", evm);
  const std::string logs = scratch_directory() + "/refused-open-files-logs";
  std::filesystem::remove_all(logs);
  const ProcessResult refused = launch("64:263", {"--config", path, "--log-dir", logs, "--drive", "--run", "5"});
  INFO(refused.output);
  CHECK(refused.exit_code == 2);
  CHECK_THAT(refused.output, Contains("daqx-launch: context " + url(evm) + ": open files: needs about 264 descriptors"));
  CHECK_THAT(refused.output, Contains("allows 263 (hard RLIMIT_NOFILE)"));
  CHECK_THAT(refused.output, Contains("nothing started"));
  CHECK_FALSE(std::filesystem::exists(logs));
  CHECK(processes_with_argument(path).empty());
}
