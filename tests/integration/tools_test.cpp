// Process-level tests of the tools: daqxctl drives a partition of real executives, daqx-launch starts,
// watches and stops one (and reports a context that cannot start).
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <thread>

#include "../support/executive_process.hpp"
#include "../support/process.hpp"

using namespace daqx::test;
using Catch::Contains;

namespace {

std::string url(std::uint16_t port) { return "http://localhost:" + std::to_string(port); }

std::string two_contexts(std::uint16_t a, std::uint16_t b, const std::string& second_class = "nton::Receiver") {
  return "<Partition name=\"tools\">\n"
         "  <Context url=\"" + url(a) + "\">\n"
         "    <Module path=\"libdaqx_nton.so\"/>\n"
         "    <Application class=\"nton::Receiver\" id=\"21\"/>\n"
         "    <Application class=\"nton::Sender\" id=\"11\"><Properties><receivers>21</receivers>"
         "<frameSize>4096</frameSize></Properties></Application>\n"
         "  </Context>\n"
         "  <Context url=\"" + url(b) + "\">\n"
         "    <Module path=\"libdaqx_nton.so\"/>\n"
         "    <Application class=\"" + second_class + "\" id=\"22\" instance=\"1\"/>\n"
         "    <Application class=\"nton::Sender\" id=\"12\" instance=\"1\"><Properties><receivers>22</receivers>"
         "<frameSize>4096</frameSize></Properties></Application>\n"
         "  </Context>\n"
         "</Partition>\n";
}

ProcessResult daqxctl(const std::string& partition, std::vector<std::string> args) {
  std::vector<std::string> argv = {tool_program("daqxctl"), "--config", partition};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_process(argv, std::chrono::seconds(60));
}

std::vector<std::string> module_env() { return {"DAQX_MODULE_PATH=" + module_directory()}; }

}  // namespace

TEST_CASE("daqxctl drives every context of a partition through the state machine", "[tools][process]") {
  std::uint16_t a = free_port(), b = free_port();
  std::string partition = write_file("ctl.xml", two_contexts(a, b));
  ExecutiveProcess first(partition, url(a));
  ExecutiveProcess second(partition, url(b));
  REQUIRE(first.wait_ready());
  REQUIRE(second.wait_ready());

  ProcessResult status = daqxctl(partition, {"status"});
  INFO(status.output);
  CHECK(status.exit_code == 0);
  CHECK_THAT(status.output, Contains("Halted") && Contains("nton::Sender") && Contains(url(b)));
  for (const char* command : {"configure", "enable"}) {
    ProcessResult r = daqxctl(partition, {command});
    INFO(command << ": " << r.output);
    CHECK(r.exit_code == 0);
  }
  CHECK(first.application(11)->getValue<std::string>("state") == "Enabled");
  CHECK(second.application(22)->getValue<std::string>("state") == "Enabled");
  CHECK(second.wait_metric(22, "frames_received", 100));

  ProcessResult one = daqxctl(partition, {"--app", "12", "stop"});
  INFO(one.output);
  CHECK(one.exit_code == 0);
  CHECK(second.application(12)->getValue<std::string>("state") == "Configured");
  CHECK(second.application(22)->getValue<std::string>("state") == "Enabled");

  ProcessResult refused = daqxctl(partition, {"--app", "12", "halt"});  // fine: Configured -> Halted
  CHECK(refused.exit_code == 0);
  ProcessResult illegal = daqxctl(partition, {"--app", "12", "enable"});  // Halted -> Enabled is illegal
  INFO(illegal.output);
  CHECK(illegal.exit_code == 1);
  CHECK_THAT(illegal.output, Contains("Halted"));

  for (const char* command : {"stop", "halt"}) daqxctl(partition, {command});
  CHECK(first.application(11)->getValue<std::string>("state") == "Halted");
  CHECK(first.stop() == 0);
  CHECK(second.stop() == 0);
}

TEST_CASE("daqxctl says which context does not answer, and refuses a broken partition", "[tools][process]") {
  std::uint16_t a = free_port(), b = free_port();
  std::string partition = write_file("ctl-down.xml", two_contexts(a, b));
  ExecutiveProcess first(partition, url(a));
  REQUIRE(first.wait_ready());
  ProcessResult status = daqxctl(partition, {"--timeout", "2", "status"});
  INFO(status.output);
  CHECK(status.exit_code == 3);
  CHECK_THAT(status.output, Contains(url(b)));

  std::string broken = write_file("ctl-broken.xml", "<Partition name=\"x\"><Context url=\"nope\"/></Partition>");
  ProcessResult bad = daqxctl(broken, {"status"});
  CHECK(bad.exit_code == 2);
  CHECK_THAT(bad.output, Contains(broken + ":1: "));
  CHECK(first.stop() == 0);
}

TEST_CASE("daqx-launch starts every context, drives a run, prints rates and stops them all cleanly",
          "[tools][process]") {
  std::uint16_t a = free_port(), b = free_port();
  std::string partition = write_file("launch.xml", two_contexts(a, b));
  ProcessResult run = run_process({tool_program("daqx-launch"), "--config", partition, "--drive", "--run", "3",
                                   "--log-dir", scratch_directory() + "/launch-logs"},
                                  std::chrono::seconds(90), module_env());
  INFO(run.output);
  CHECK(run.exit_code == 0);
  CHECK_THAT(run.output, Contains("2 contexts of partition 'tools' up"));
  CHECK_THAT(run.output, Contains("receive_rate_bytes"));
  CHECK_THAT(run.output, Contains("frames_received"));
  CHECK_THAT(run.output, Contains("all contexts stopped cleanly"));
}

TEST_CASE("daqx-launch reports a context that fails to start, with its log, and stops the others",
          "[tools][process]") {
  std::uint16_t a = free_port(), b = free_port();
  std::string partition = write_file("launch-bad.xml", two_contexts(a, b, "nton::Nothing"));
  ProcessResult run = run_process({tool_program("daqx-launch"), "--config", partition, "--drive", "--run", "3",
                                   "--log-dir", scratch_directory() + "/launch-bad-logs"},
                                  std::chrono::seconds(90), module_env());
  INFO(run.output);
  CHECK(run.exit_code == 1);
  CHECK_THAT(run.output, Contains("context " + url(b) + " on this machine"));
  CHECK_THAT(run.output, Contains("failed to start (exit code 2)"));
  CHECK_THAT(run.output, Contains("unknown application class 'nton::Nothing'"));
  // The context that did start was stopped: nothing answers on its port any more.
  CHECK_FALSE(daqx::ControlClient(url(a), std::chrono::seconds(1)).get("/api/executive").answered());
}

TEST_CASE("daqx-launch --connect opens every connection after configure, before it enables", "[tools][process]") {
  std::uint16_t a = free_port(), b = free_port(), data_a = free_port(), data_b = free_port();
  // Connections at first use: without the connect command none would be open before the first frame.
  const auto context = [](std::uint16_t control, std::uint16_t data, const std::string& applications) {
    return "  <Context url=\"" + url(control) + "\">\n"
           "    <Endpoint protocol=\"tcp\" hostname=\"127.0.0.1\" port=\"" + std::to_string(data) +
           "\" network=\"data\"><Properties><connectAt>first-use</connectAt></Properties></Endpoint>\n"
           "    <Module path=\"libdaqx_pttcp.so\"/>\n    <Module path=\"libdaqx_nton.so\"/>\n" + applications +
           "  </Context>\n";
  };
  std::string partition = write_file("launch-connect.xml",
      "<Partition name=\"connect\">\n" +
      context(a, data_a, "    <Application class=\"nton::Receiver\" id=\"21\" network=\"data\"/>\n") +
      context(b, data_b, "    <Application class=\"nton::Sender\" id=\"11\" network=\"data\"><Properties>"
                         "<receivers>21</receivers><frameSize>4096</frameSize></Properties></Application>\n") +
      "</Partition>\n");
  ProcessResult run = run_process({tool_program("daqx-launch"), "--config", partition, "--drive", "--connect", "--run",
                                   "2", "--log-dir", scratch_directory() + "/launch-connect-logs"},
                                  std::chrono::seconds(90), module_env());
  INFO(run.output);
  CHECK(run.exit_code == 0);
  // One outgoing connection per context (the sender's data, the receiver's acknowledgements), both up.
  CHECK_THAT(run.output, Contains("2/2 connections up in"));
  CHECK(run.output.find("2/2 connections up in") < run.output.find("configured and enabled"));
  CHECK_THAT(run.output, Contains("frames_received"));
  CHECK_THAT(run.output, Contains("all contexts stopped cleanly"));

  ProcessResult alone = run_process({tool_program("daqx-launch"), "--config", partition, "--connect"},
                                    std::chrono::seconds(30), module_env());
  CHECK(alone.exit_code == 2);
  CHECK_THAT(alone.output, Contains("--connect goes with --drive"));
}

TEST_CASE("Ctrl-C stops a launched partition cleanly", "[tools][process]") {
  std::uint16_t a = free_port(), b = free_port();
  std::string partition = write_file("launch-int.xml", two_contexts(a, b));
  std::string logs = scratch_directory() + "/launch-int-logs";
  pid_t launcher = fork();
  if (launcher == 0) {
    setenv("DAQX_MODULE_PATH", module_directory().c_str(), 1);
    int null = open("/dev/null", O_WRONLY);
    dup2(null, STDOUT_FILENO);
    execl(tool_program("daqx-launch").c_str(), "daqx-launch", "--config", partition.c_str(), "--log-dir", logs.c_str(),
          static_cast<char*>(nullptr));
    _exit(127);
  }
  auto up = [&](std::uint16_t port) { return daqx::ControlClient(url(port), std::chrono::seconds(1)).get("/api/executive").status == 200; };
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!(up(a) && up(b)) && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  REQUIRE((up(a) && up(b)));
  kill(launcher, SIGINT);
  int status = 0;
  deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (waitpid(launcher, &status, WNOHANG) != launcher) {
    if (std::chrono::steady_clock::now() > deadline) {
      kill(launcher, SIGKILL);
      waitpid(launcher, &status, 0);
      FAIL("daqx-launch did not stop on SIGINT within 30 s");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  CHECK_FALSE(up(a));
  CHECK_FALSE(up(b));
}
