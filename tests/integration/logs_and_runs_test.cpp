// Process-level tests of what an operator sees of logs and runs: every line a running executive prints is a
// log line naming its context, in text or JSON and filtered by level; a run number allocated by daqxctl shows
// in the executive's status, /metrics, its log lines and the event files written during the run.
#include <catch2/catch.hpp>

#include <Poco/JSON/Object.h>
#include <Poco/JSON/Parser.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "../support/executive_process.hpp"
#include "../support/partition_builder.hpp"
#include "../support/process.hpp"
#include "daqx/executive/run_number.hpp"

using namespace daqx::test;
using Catch::Contains;

namespace {

std::string context_url(std::uint16_t port) { return "http://127.0.0.1:" + std::to_string(port); }

std::string receiver_partition(const std::string& name, const std::string& url) {
  PartitionBuilder partition(name);
  partition.context(url).module("libdaqx_nton.so").application("nton::Receiver", 21);
  return write_file(name + ".xml", partition.xml());
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::string regex_escaped(const std::string& text) {
  return std::regex_replace(text, std::regex(R"([.^$|()\[\]{}*+?\\])"), R"(\$&)");
}

// The text layout of docs/operations.md, for this context.
std::regex text_line(const std::string& url) {
  return std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z (debug  |info   |warning|error  ) )" +
                    regex_escaped(url) + R"(( run=[1-9]\d*)? \S+: .*)");
}

// Sets an environment variable for the executives started while it lives (they inherit it).
struct ScopedEnvironment {
  std::string name;
  ScopedEnvironment(std::string variable, const std::string& value) : name(std::move(variable)) {
    ::setenv(name.c_str(), value.c_str(), 1);
  }
  ~ScopedEnvironment() { ::unsetenv(name.c_str()); }
};

ProcessResult daqxctl(const std::string& url, std::vector<std::string> args, std::vector<std::string> env = {}) {
  std::vector<std::string> argv = {tool_program("daqxctl"), "--url", url};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_process(argv, std::chrono::seconds(60), env);
}

}  // namespace

TEST_CASE("every line a running executive prints is a text log line with time, level, its context URL and "
          "component", "[logs][process]") {
  const std::uint16_t port = free_port();
  const std::string url = context_url(port);
  ExecutiveProcess executive(receiver_partition("logs-text", url), url);
  REQUIRE(executive.wait_ready());
  REQUIRE(executive.transition("configure").status == 200);
  REQUIRE(executive.stop() == 0);
  const std::string output = executive.output();
  INFO(output);
  const std::vector<std::string> lines = lines_of(output);
  REQUIRE(lines.size() >= 2);
  const std::regex layout = text_line(url);
  for (const std::string& line : lines) {
    INFO(line);
    CHECK(std::regex_match(line, layout));
  }
  CHECK_THAT(output, Contains("info    " + url + " executive: ready (pid "));
  CHECK_THAT(output, Contains(" executive: stopping ("));
}

TEST_CASE("with DAQX_LOG_FORMAT=json every line is one JSON object with time, level, context, component and "
          "message", "[logs][process]") {
  const std::uint16_t port = free_port();
  const std::string url = context_url(port);
  ScopedEnvironment json("DAQX_LOG_FORMAT", "json");
  ExecutiveProcess executive(receiver_partition("logs-json", url), url);
  REQUIRE(executive.wait_ready());
  REQUIRE(executive.stop() == 0);
  const std::vector<std::string> lines = lines_of(executive.output());
  REQUIRE(lines.size() >= 2);
  for (const std::string& line : lines) {
    INFO(line);
    Poco::JSON::Object::Ptr object;
    REQUIRE_NOTHROW(object = Poco::JSON::Parser().parse(line).extract<Poco::JSON::Object::Ptr>());
    CHECK(std::regex_match(object->getValue<std::string>("time"),
                           std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z)")));
    CHECK(object->getValue<std::string>("context") == url);
    CHECK(object->has("level"));
    CHECK(object->has("component"));
    CHECK(object->has("message"));
    CHECK_FALSE(object->has("run"));  // no run was on
  }
}

TEST_CASE("the level filter (--log-level warning) drops the info lines, and an unknown level or format is a "
          "usage error",
          "[logs][process]") {
  const std::uint16_t port = free_port();
  const std::string url = context_url(port);
  const std::string path = receiver_partition("logs-level", url);
  {
    ExecutiveProcess executive(path, url, {"--log-level", "warning", "--log-format", "text"});
    REQUIRE(executive.wait_ready());
    REQUIRE(executive.stop() == 0);
    INFO(executive.output());
    CHECK(executive.output().find(" info ") == std::string::npos);
  }
  const ProcessResult level = run_process({executive_program(), "--config", path, "--context", url, "--log-level",
                                           "verbose"}, std::chrono::seconds(30));
  CHECK(level.exit_code == 2);
  CHECK_THAT(level.output, Contains("--log-level: unknown value 'verbose'"));
  const ProcessResult format = run_process({executive_program(), "--config", path, "--context", url},
                                           std::chrono::seconds(30), {"DAQX_LOG_FORMAT=xml"});
  CHECK(format.exit_code == 2);
  CHECK_THAT(format.output, Contains("DAQX_LOG_FORMAT: unknown value 'xml'"));
}

TEST_CASE("daqxctl enable --run-file allocates the next run, which shows in the executive's status, /metrics, "
          "log lines and event file headers until stop", "[runs][process]") {
  const std::uint16_t port = free_port();
  const std::string url = context_url(port);
  const std::string directory = scratch_directory() + "/run-files";
  PartitionBuilder partition("runs");
  ContextBuilder context = partition.context(url);
  context.module("libdaqx_evb.so");
  context.application("evb::BU", 200, 0).properties({{"output", "file", ""}, {"outputDirectory", directory, ""}});
  context.application("evb::RU", 100, 0);
  context.application("evb::RU", 101, 1);
  context.application("evb::EvM", 10, 10).property("maxEvents", "100", "unsigned");
  const std::string xml = partition.xml();
  ExecutiveProcess executive(write_file("runs.xml", xml), url);
  REQUIRE(executive.wait_ready());
  const std::string run_file = write_file("runs", "41\n");

  REQUIRE(daqxctl(url, {"configure"}).exit_code == 0);
  const ProcessResult enable = daqxctl(url, {"enable"}, {"DAQX_RUN_FILE=" + run_file});
  INFO(enable.output);
  REQUIRE(enable.exit_code == 0);
  CHECK_THAT(enable.output, Contains("run 42 (from " + run_file + ")"));
  CHECK(daqx::RunNumberFile(run_file).current() == 42);

  CHECK_THAT(executive.get("/api/executive").body, Contains(R"("run":42)"));
  for (int tid : {10, 100, 101, 200}) CHECK(executive.application(static_cast<std::uint32_t>(tid))->getValue<int>("run") == 42);
  CHECK_THAT(executive.get("/metrics").body, Contains("\ndaqx_run_number 42\n"));
  REQUIRE(executive.wait_metric(10, "events_completed", 100));

  // One run at a time: another number while 42 is on is refused, and nothing changes.
  const ProcessResult other = daqxctl(url, {"--app", "10", "enable", "--run", "7"});
  CHECK(other.exit_code == 1);
  REQUIRE(daqxctl(url, {"stop"}).exit_code == 0);
  CHECK_THAT(executive.get("/api/executive").body, Contains(R"("run":0)"));
  CHECK(executive.application(200)->getValue<int>("run") == 0);
  CHECK_THAT(executive.get("/metrics").body, Contains("\ndaqx_run_number 0\n"));
  REQUIRE(executive.stop() == 0);

  const std::string output = executive.output();
  INFO(output);
  const std::regex layout = text_line(url);
  bool enabled_line = false;
  for (const std::string& line : lines_of(output)) {
    INFO(line);
    CHECK(std::regex_match(line, layout));
    if (line.find(" run=42 executive: run 42 enabled") != std::string::npos) enabled_line = true;
  }
  CHECK(enabled_line);
  CHECK_THAT(output, Contains(" run=42 "));

  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(directory)) files.push_back(entry.path().string());
  REQUIRE_FALSE(files.empty());
  std::vector<std::string> argv{program_directory() + "/../apps/evb/daqx-evb-dump"};
  argv.insert(argv.end(), files.begin(), files.end());
  const ProcessResult dump = run_process(argv, std::chrono::seconds(60));
  INFO(dump.output);
  CHECK(dump.exit_code == 0);
  CHECK_THAT(dump.output, Contains("format 2, run number 42,"));
}

TEST_CASE("daqxctl enable --run N sends that run, and a run with another command is a usage error",
          "[runs][process]") {
  const std::uint16_t port = free_port();
  const std::string url = context_url(port);
  ExecutiveProcess executive(receiver_partition("runs-given", url), url);
  REQUIRE(executive.wait_ready());
  REQUIRE(daqxctl(url, {"configure"}).exit_code == 0);
  const ProcessResult enable = daqxctl(url, {"enable", "--run", "1234"});
  INFO(enable.output);
  CHECK(enable.exit_code == 0);
  CHECK_THAT(enable.output, Contains("run 1234\n"));
  CHECK(executive.application(21)->getValue<int>("run") == 1234);
  const ProcessResult stop = daqxctl(url, {"stop", "--run", "1234"});
  CHECK(stop.exit_code == 2);
  CHECK_THAT(stop.output, Contains("--run and --run-file go with enable"));
  CHECK(daqxctl(url, {"enable", "--run", "0"}).exit_code == 2);
  CHECK(executive.stop() == 0);
}
