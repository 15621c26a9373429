// Process-level tests of the tools: daqxctl drives and watches a partition of real executives, daqx-launch starts,
// watches and stops one (and reports a context that cannot start); both on a terminal and off one.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <regex>
#include <sstream>
#include <thread>

#include "../support/executive_process.hpp"
#include "../support/launcher_process.hpp"
#include "../support/partition_builder.hpp"
#include "../support/process.hpp"

using namespace daqx::test;
using Catch::Contains;

namespace {

std::string url(std::uint16_t port) { return "http://localhost:" + std::to_string(port); }

std::string two_contexts(std::uint16_t a, std::uint16_t b, const std::string& second_class = "nton::Receiver") {
  PartitionBuilder partition("tools");
  ContextBuilder first = partition.context(url(a));
  first.module("libdaqx_nton.so");
  first.application("nton::Receiver", 21);
  first.application("nton::Sender", 11).properties({{"receivers", "21", ""}, {"frameSize", "4096", ""}});
  ContextBuilder second = partition.context(url(b));
  second.module("libdaqx_nton.so");
  second.application(second_class, 22, 1);
  second.application("nton::Sender", 12, 1).properties({{"receivers", "22", ""}, {"frameSize", "4096", ""}});
  return partition.xml();
}

ProcessResult daqxctl(const std::string& partition, std::vector<std::string> args) {
  std::vector<std::string> argv = {tool_program("daqxctl"), "--config", partition};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_process(argv, std::chrono::seconds(60));
}

std::vector<std::string> module_env() { return {"DAQX_MODULE_PATH=" + module_directory()}; }

// The lines of `text` that contain `what`, in order.
std::vector<std::string> lines_with(const std::string& text, const std::string& what) {
  std::vector<std::string> found;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);)
    if (line.find(what) != std::string::npos) found.push_back(line);
  return found;
}

// "... 123456 frames  500 MB": the amount of frames a table line gives (not a rate); -1 when none.
double frames_in(const std::string& line) {
  static const std::regex amount(R"((\d+) frames( |$))");
  std::smatch match;
  return std::regex_search(line, match, amount) ? std::stod(match[1]) : -1;
}

std::size_t occurrences(const std::string& text, const std::string& what) {
  std::size_t count = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++count;
  return count;
}

// Two executives of two_contexts() that answer, for daqxctl watch to look at.
struct WatchedPartition {
  explicit WatchedPartition(const std::string& file)
      : a(free_port()), b(free_port()), partition(write_file(file, two_contexts(a, b))), first(partition, url(a)),
        second(partition, url(b)) {
    REQUIRE(first.wait_ready());
    REQUIRE(second.wait_ready());
  }
  // Configured and enabled, with frames going.
  void run() {
    for (const char* command : {"configure", "enable"}) REQUIRE(daqxctl(partition, {command}).exit_code == 0);
    REQUIRE(first.wait_metric(21, "frames_received", 100));
    REQUIRE(second.wait_metric(22, "frames_received", 100));
  }
  std::uint16_t a, b;
  std::string partition;
  ExecutiveProcess first, second;
};

// What a view redrawn in place writes before each redraw: back up over the lines drawn, clear to the end.
const std::regex kRedraw("\x1b\\[[0-9]+A\r\x1b\\[J");

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
  CHECK_THAT(run.output, Contains("nton/receiver/0") && Contains(" frames/s"));
  CHECK_THAT(run.output, Contains("summary of run"));
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
  PartitionBuilder connect("connect");
  const auto context = [&](std::uint16_t control, std::uint16_t data) {
    ContextBuilder made = connect.context(url(control));
    made.endpoint("tcp", "127.0.0.1", data, "data").property("connectAt", "first-use");
    made.module("libdaqx_pttcp.so").module("libdaqx_nton.so");
    return made;
  };
  // The receiver names its sender: its acknowledgements' connection is in the plan, which --connect opens.
  context(a, data_a).application("nton::Receiver", 21, std::nullopt, "data").property("senders", "11");
  context(b, data_b)
      .application("nton::Sender", 11, std::nullopt, "data")
      .properties({{"receivers", "21", ""}, {"frameSize", "4096", ""}});
  std::string partition = write_file("launch-connect.xml", connect.xml());
  ProcessResult run = run_process({tool_program("daqx-launch"), "--config", partition, "--drive", "--connect", "--run",
                                   "2", "--log-dir", scratch_directory() + "/launch-connect-logs"},
                                  std::chrono::seconds(90), module_env());
  INFO(run.output);
  CHECK(run.exit_code == 0);
  // One outgoing connection per context (the sender's data, the receiver's acknowledgements), both up.
  CHECK_THAT(run.output, Contains("2/2 connections up in"));
  CHECK(run.output.find("2/2 connections up in") < run.output.find("configured and enabled"));
  CHECK_THAT(run.output, Contains(" frames/s"));
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

TEST_CASE("daqxctl watch shows each application's state and rates, which change while a run goes", "[tools][process][watch]") {
  WatchedPartition watched("watch.xml");
  const std::string& partition = watched.partition;
  const std::uint16_t a = watched.a, b = watched.b;

  ProcessResult halted = daqxctl(partition, {"watch", "--count", "1"});
  INFO(halted.output);
  CHECK(halted.exit_code == 0);
  const std::vector<std::string> before = lines_with(halted.output, url(a) + " nton/receiver/0");
  REQUIRE(before.size() == 1);
  CHECK_THAT(before[0], Contains("Halted") && !Contains("frames/s"));
  CHECK_THAT(halted.output, Contains(url(b) + "  answering"));

  watched.run();
  ProcessResult running = daqxctl(partition, {"watch", "--count", "3", "--interval", "0.5"});
  INFO(running.output);
  CHECK(running.exit_code == 0);
  CHECK(running.output.find('\x1b') == std::string::npos);  // not a terminal: no cursor movement
  const std::vector<std::string> rows = lines_with(running.output, url(a) + " nton/receiver/0");
  REQUIRE(rows.size() == 3);  // one line per refresh
  CHECK_THAT(rows[0], Contains("Enabled") && !Contains("frames/s"));  // one reading: no rate yet
  CHECK_THAT(rows[1], Contains("Enabled") && Contains(" frames/s"));
  CHECK_THAT(rows[2], Contains(" frames/s"));
  CHECK(frames_in(rows[2]) > frames_in(rows[1]));
  CHECK(frames_in(rows[1]) > frames_in(rows[0]));
  CHECK_THAT(running.output, Contains("connections ") && Contains(" up  pool "));
  CHECK(lines_with(running.output, "partition nton/sender (2)").size() == 3);  // the senders' total

  // A stopped application shows its state and no rate.
  REQUIRE(daqxctl(partition, {"--app", "12", "stop"}).exit_code == 0);
  ProcessResult stopped = daqxctl(partition, {"top", "--count", "2", "--interval", "0.5"});
  INFO(stopped.output);
  const std::vector<std::string> sender = lines_with(stopped.output, url(b) + " nton/sender/1");
  REQUIRE(sender.size() == 2);
  CHECK_THAT(sender[1], Contains("Configured") && !Contains("frames/s"));
  CHECK_THAT(lines_with(stopped.output, url(a) + " nton/sender/0").back(), Contains("Enabled") && Contains(" frames/s"));

  ProcessResult wrong = daqxctl(partition, {"status", "--count", "2"});
  CHECK(wrong.exit_code == 2);
  CHECK_THAT(wrong.output, Contains("--interval and --count go with watch"));
  CHECK(daqxctl(partition, {"watch", "--interval", "0"}).exit_code == 2);
  const ProcessResult no_fanout = daqxctl(partition, {"watch", "--fanout", "0"});
  CHECK(no_fanout.exit_code == 2);
  CHECK_THAT(no_fanout.output,
             Contains("--fanout (contexts asked at once): '0' is out of range for an unsigned integer: below the minimum 1"));
  CHECK_THAT(run_process({tool_program("daqxctl"), "--help"}, std::chrono::seconds(10)).output,
             Contains("watch (or top)") && Contains("--count N"));
}

TEST_CASE("daqxctl watch shows a killed context as unreachable and goes on with the others", "[tools][process][watch]") {
  WatchedPartition watched("watch-killed.xml");
  const std::string& partition = watched.partition;
  const std::uint16_t a = watched.a, b = watched.b;
  watched.run();
  CHECK_THAT(daqxctl(partition, {"watch", "--count", "1"}).output, Contains(url(b) + "  answering"));
  watched.second.kill_now();
  ProcessResult after = daqxctl(partition, {"watch", "--count", "2", "--interval", "0.5"});
  INFO(after.output);
  CHECK(after.exit_code == 0);  // a viewer: what it shows is the news, not an error
  CHECK(lines_with(after.output, url(b) + "  unreachable").size() == 2);
  CHECK(lines_with(after.output, url(a) + "  answering").size() == 2);
  CHECK_THAT(lines_with(after.output, url(a) + " nton/receiver/0").back(), Contains(" frames/s"));
  // Its own URL answering as --url: the one context, unreachable, still exit 0.
  ProcessResult alone = run_process({tool_program("daqxctl"), "--url", url(b), "watch", "--count", "1"},
                                    std::chrono::seconds(30));
  INFO(alone.output);
  CHECK(alone.exit_code == 0);
  CHECK_THAT(alone.output, Contains(url(b) + "  unreachable"));
}

TEST_CASE("on a terminal daqxctl watch redraws its table in place, off one it only appends lines", "[tools][process][watch]") {
  WatchedPartition watched("watch-tty.xml");
  watched.run();
  const std::vector<std::string> watch = {tool_program("daqxctl"), "--config", watched.partition, "watch", "--count", "3",
                                          "--interval", "0.3"};
  ProcessResult terminal = run_in_terminal(watch, std::chrono::seconds(60));
  INFO(terminal.output);
  CHECK(terminal.exit_code == 0);
  const auto redraws = std::distance(std::sregex_iterator(terminal.output.begin(), terminal.output.end(), kRedraw),
                                     std::sregex_iterator());
  CHECK(redraws == 2);  // three tables, the last two drawn over the one before
  CHECK(occurrences(terminal.output, "UNIT") == 3);  // a heading with column names each time
  CHECK_THAT(terminal.output, Contains("  nton/receiver/0") && Contains(" frames/s"));

  ProcessResult piped = run_process(watch, std::chrono::seconds(60));
  INFO(piped.output);
  CHECK(piped.exit_code == 0);
  CHECK(piped.output.find('\x1b') == std::string::npos);
  CHECK(occurrences(piped.output, "UNIT") == 0);  // plain lines say what they are themselves
}

TEST_CASE("daqx-launch --drive prints a line per application per second, a rate only from its second reading, "
          "then a summary per unit and kind and every counter in a file", "[tools][process][watch]") {
  std::uint16_t a = free_port(), b = free_port();
  std::string partition = write_file("launch-table.xml", two_contexts(a, b));
  const std::string logs = scratch_directory() + "/launch-table-logs";
  LauncherProcess launcher({"--config", partition, "--drive", "--run", "3", "--log-dir", logs}, module_env());
  REQUIRE(launcher.wait(std::chrono::seconds(90)) == 0);
  const std::string output = launcher.output();
  INFO(output);
  CHECK(output.find('\x1b') == std::string::npos);
  const std::vector<std::string> receiver = lines_with(output, "nton/receiver/0 ");
  REQUIRE(receiver.size() >= 3);
  CHECK(receiver[0].rfind("   0.0 / 3 s  nton/receiver/0", 0) == 0);
  CHECK_THAT(receiver[0], Contains("Enabled") && !Contains("frames/s"));  // the first reading: nothing to compare
  CHECK_THAT(receiver[1], Contains(" / 3 s  nton/receiver/0") && Contains(" frames/s") && Contains("B/s"));
  CHECK_THAT(output, Contains("nton/receiver (2)"));

  // The summary: amounts, averages over the enabled time, losses and errors; no settings, no raw byte counts.
  const std::size_t summary = output.find("daqx-launch: summary of run ");
  REQUIRE(summary != std::string::npos);
  const std::string tail = output.substr(summary);
  CHECK_THAT(tail, Contains("s enabled; averages are over that time"));
  CHECK_THAT(tail, Contains("BUILT OR MOVED") && Contains("AVERAGE RATE") && Contains("LOST OR DROPPED") && Contains("ERRORS"));
  const std::vector<std::string> receiver_summary = lines_with(tail, "  nton/receiver/0 ");
  REQUIRE(receiver_summary.size() == 1);
  CHECK_THAT(receiver_summary[0], Contains(" frames ") && Contains(" frames/s") && Contains("B/s") && Contains("none"));
  CHECK(lines_with(tail, "nton/receiver (2)").size() == 1);
  CHECK(tail.find("frameSize") == std::string::npos);
  CHECK(tail.find("receive_rate") == std::string::npos);
  CHECK_THAT(tail, Contains("transports: no errors, no reconnects"));

  // Every counter in the file the summary names, zeros included.
  CHECK(launcher.summary_counter("nton/receiver/0", "frames_received") > 0);
  CHECK(launcher.summary_counter("nton/receiver/0", "pattern_errors") == 0);
  CHECK(launcher.summary_counter("nton/receiver/0", "receive_rate_bytes") == -1);  // a gauge, not a counter
}

TEST_CASE("on a terminal daqx-launch --drive redraws its table in place", "[tools][process][watch]") {
  std::uint16_t a = free_port(), b = free_port();
  std::string partition = write_file("launch-tty.xml", two_contexts(a, b));
  ProcessResult run = run_in_terminal({tool_program("daqx-launch"), "--config", partition, "--drive", "--run", "3",
                                       "--log-dir", scratch_directory() + "/launch-tty-logs"},
                                      std::chrono::seconds(90), module_env());
  INFO(run.output);
  CHECK(run.exit_code == 0);
  const auto redraws = std::distance(std::sregex_iterator(run.output.begin(), run.output.end(), kRedraw),
                                     std::sregex_iterator());
  CHECK(redraws >= 2);  // a table each second after the first, each over the one before
  CHECK_THAT(run.output, Contains(" / 3 s  partition tools") && Contains("summary of run"));
  CHECK_THAT(run.output, Contains("all contexts stopped cleanly"));
}
