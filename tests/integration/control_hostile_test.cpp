// Process-level tests of the control port against clients that misbehave: requests trickled a byte at a time,
// connections left idle, floods of connections, requests the HTTP parser refuses, long waits and slow transitions.
// Whatever they do, status reads, stop and halt are answered at once, every refusal is clear (JSON under /api),
// and nothing stays behind (threads, descriptors).
#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <Poco/JSON/Parser.h>

#include <chrono>
#include <filesystem>
#include <future>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "../support/executive_metrics.hpp"
#include "../support/executive_process.hpp"
#include "../support/exposition_check.hpp"
#include "../support/partition_builder.hpp"
#include "../support/probe_context.hpp"
#include "../support/raw_client.hpp"

using namespace daqx::test;
using Catch::Contains;
using Clock = std::chrono::steady_clock;

namespace {

// Entries of /proc/PID/WHAT now: "fd" for the descriptors the process holds, "task" for its threads (-1 when it
// cannot be read).
long proc_entries(int pid, const std::string& what) {
  std::error_code error;
  long count = 0;
  for (auto it = std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/" + what, error);
       !error && it != std::filesystem::directory_iterator(); it.increment(error))
    ++count;
  return error ? -1 : count;
}

}  // namespace

TEST_CASE("clients that trickle a request a byte at a time hold no thread past the request deadline, and status "
          "reads and halt are answered while they do",
          "[executive][process][hostile][control]") {
  ProbeContext probe("trickle");
  ExecutiveProcess& executive = probe.executive;
  REQUIRE(executive.transition("configure").status == 200);

  // Eight slow clients, each sending one byte every 300 ms of a request that would take far longer than the
  // deadline to finish: a per-read timeout would never cut them.
  const std::string request = "GET /api/applications HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Padding: " +
                              std::string(200, 'a') + "\r\n\r\n";
  std::vector<std::unique_ptr<RawClient>> slow;
  for (int i = 0; i < 8; ++i) {
    slow.push_back(std::make_unique<RawClient>(probe.port));
    REQUIRE(slow.back()->connected());
  }
  std::atomic<bool> trickling{true};
  std::vector<std::size_t> sent_before_cut(slow.size(), 0);
  std::thread trickler([&] {
    for (std::size_t at = 0; at < request.size() && trickling; ++at) {
      for (std::size_t i = 0; i < slow.size(); ++i)
        if (sent_before_cut[i] == at && slow[i]->send(request.substr(at, 1))) sent_before_cut[i] = at + 1;
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
    }
  });
  std::this_thread::sleep_for(std::chrono::seconds(1));

  // While all eight hold a connection: reads and a halt get through, each in well under the request deadline.
  for (int i = 0; i < 3; ++i) {
    const auto asked = Clock::now();
    daqx::HttpReply status = executive.get("/api/applications");
    CHECK(status.status == 200);
    CHECK(Clock::now() - asked < std::chrono::seconds(3));
  }
  const auto asked = Clock::now();
  CHECK(executive.transition("halt").status == 200);
  CHECK(Clock::now() - asked < std::chrono::seconds(3));

  // Each slow client is answered 408 with a JSON reason when its deadline (5 s) passes, long before it finishes.
  for (auto& client : slow) {
    const std::string answer = client->read_all(std::chrono::seconds(15));
    CHECK(status_of(answer) == 408);
    CHECK_THAT(json_error_of(body_of(answer)), Contains("not received whole within 5 s"));
  }
  trickling = false;
  trickler.join();
  for (std::size_t sent : sent_before_cut) CHECK(sent < request.size());
  CHECK(control_refusals(executive.get("/metrics"), "deadline") >= 8);
  CHECK(executive.stop() == 0);
}

TEST_CASE("a flood of idle and abandoned connections ends in closed connections: the executive answers afterwards "
          "and gives back its descriptors and threads",
          "[executive][process][hostile][control]") {
  ProbeContext probe("flood");
  ExecutiveProcess& executive = probe.executive;
  REQUIRE(executive.get("/api/applications").status == 200);
  const long descriptors_before = proc_entries(executive.pid(), "fd");
  const long threads_before = proc_entries(executive.pid(), "task");
  REQUIRE(descriptors_before > 0);

  {
    // 300 connections: some idle, some with half a request line, some with a header and no end.
    std::vector<std::unique_ptr<RawClient>> flood;
    for (int i = 0; i < 300; ++i) {
      flood.push_back(std::make_unique<RawClient>(probe.port));
      if (i % 3 == 1) flood.back()->send("GET /api/appl");
      if (i % 3 == 2) flood.back()->send("POST /api/transition HTTP/1.1\r\nContent-Length: 100000\r\n\r\n{");
    }
    // Every one of them is closed by the server within the deadline, plus the time to reach it in the queue.
    int closed = 0;
    for (auto& client : flood)
      if (client->closed_within(std::chrono::seconds(30))) ++closed;
    CHECK(closed == 300);
  }
  // Afterwards: answered, and what the flood took is back (the descriptors within a margin for the server's
  // own threads' lazily opened files; the threads no more than the server's pool bound).
  CHECK(wait_until([&] { return executive.get("/api/applications").status == 200; }, std::chrono::seconds(20)));
  CHECK(wait_until([&] { return proc_entries(executive.pid(), "fd") <= descriptors_before + 2; }, std::chrono::seconds(20)));
  CHECK(proc_entries(executive.pid(), "task") <= threads_before + 16);
  CHECK(control_refusals(executive.get("/metrics"), "deadline") >= 1);
  CHECK(executive.stop() == 0);
}

TEST_CASE("what the HTTP parser refuses is answered 400 with a JSON reason, and the executive carries on",
          "[executive][process][hostile][control]") {
  ProbeContext probe("parser");
  ExecutiveProcess& executive = probe.executive;

  const std::vector<std::string> refused = {
      "GET /api/applications HTTP/9.9x\r\n\r\n",                                       // a version that is none
      std::string("\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", 11) + "\r\n\r\n",    // TLS on the plain port
      "POSTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTT /api/transition HTTP/1.1\r\n\r\n",  // method too long
  };
  for (const std::string& bytes : refused) {
    RawClient client(probe.port);
    REQUIRE(client.connected());
    client.send(bytes);
    const std::string answer = client.read_all(std::chrono::seconds(10));
    INFO("sent: " << bytes.substr(0, 60));
    CHECK(status_of(answer) == 400);
    CHECK_THAT(answer, Contains("Content-Type: application/json"));
    CHECK_THAT(json_error_of(body_of(answer)), Contains("malformed request"));
  }
  CHECK(control_refusals(executive.get("/metrics"), "malformed") >= static_cast<double>(refused.size()));
  CHECK(executive.get("/api/applications").status == 200);
  CHECK(executive.stop() == 0);
}

TEST_CASE("connect waits are parked off the request threads: 32 wait at once, twice the server's 16 threads, a 33rd "
          "is answered 503 at once, and reads, halt and the executive's own stop are not held up by them",
          "[executive][process][hostile][control]") {
  const std::uint16_t port = free_port();
  const std::uint16_t absent_port = free_port();  // the peer context is never started: its connection stays down
  PartitionBuilder waiting("waits");
  for (const auto& [control, data, id, instance] :
       {std::tuple{port, free_port(), 1u, std::optional<std::uint32_t>()},
        std::tuple{free_port(), absent_port, 2u, std::optional(1u)}}) {
    ContextBuilder context = waiting.context("http://127.0.0.1:" + std::to_string(control));
    context.endpoint("tcp", "127.0.0.1", data, "data");
    context.module("libdaqx_pttcp.so").module("libdaqx_test_probe.so");
    PropertiesBuilder application = context.application("test::Probe", id, instance, "data");
    if (id == 1u) application.property("peer", "2");  // the plan's one connection: to the context never started
  }
  const std::string partition = write_file("waits.xml", waiting.xml());
  ExecutiveProcess executive(partition, "http://127.0.0.1:" + std::to_string(port));
  REQUIRE(executive.wait_ready());

  constexpr int kWaits = 32;  // kMaxConnectWaits; the server has 16 threads (kControlServerThreads)
  std::vector<std::future<daqx::HttpReply>> waits;
  for (int i = 0; i < kWaits; ++i)
    waits.push_back(std::async(std::launch::async, [&] { return executive.post("/api/connect?timeout=60000", ""); }));
  // Until all are taken in (the server's gauge says so), however busy the machine: had they kept their threads,
  // 16 would still be queued, the gauge would stay at 16 and the 33rd would wait behind them for 60 s.
  REQUIRE(wait_until([&] { return exposed_value(port, "daqx_control_connect_waits") == kWaits; }));
  const auto asked = Clock::now();
  daqx::HttpReply extra = executive.post("/api/connect?timeout=60000", "");
  CHECK(Clock::now() - asked < std::chrono::seconds(10));
  CHECK(extra.status == 503);
  CHECK_THAT(json_error_of(extra.body), Contains("busy: 32 connect waits"));
  CHECK(control_refusals(executive.get("/metrics"), "busy") == 1);

  for (int i = 0; i < 3; ++i) {
    const auto read_asked = Clock::now();
    CHECK(executive.get("/api/applications").status == 200);
    CHECK(executive.get("/api/transports").status == 200);
    CHECK(Clock::now() - read_asked < std::chrono::seconds(3));
  }
  const auto halt_asked = Clock::now();
  CHECK(executive.transition("configure").status == 200);
  CHECK(executive.transition("halt").status == 200);
  CHECK(Clock::now() - halt_asked < std::chrono::seconds(3));
  for (auto& wait : waits)
    CHECK(wait.wait_for(std::chrono::milliseconds(0)) == std::future_status::timeout);  // still waiting

  // SIGTERM with 32 waits in progress: they end (503, the executive is stopping), and the executive exits cleanly
  // and soon, not after their 60 s.
  const auto stop_asked = Clock::now();
  CHECK(executive.stop() == 0);
  CHECK(Clock::now() - stop_asked < std::chrono::seconds(15));
  for (auto& wait : waits) {
    REQUIRE(wait.wait_for(std::chrono::seconds(10)) == std::future_status::ready);
    const daqx::HttpReply reply = wait.get();
    CHECK(reply.status != 200);  // 503 (stopping) or a closed connection (-1): never "all up"
  }
}

TEST_CASE("transitions asked while a slow one runs are refused at once as busy, each with a clear answer, and status "
          "reads go on meanwhile",
          "[executive][process][hostile][control]") {
  ProbeContext probe("slow", {{"delayIn", "configure", ""}, {"delayMs", "4000", "unsigned"}});
  ExecutiveProcess& executive = probe.executive;

  auto slow = std::async(std::launch::async, [&] { return executive.transition("configure"); });
  std::this_thread::sleep_for(std::chrono::milliseconds(700));  // the configure hook is sleeping now
  std::vector<std::future<daqx::HttpReply>> others;
  for (const char* command : {"configure", "halt", "enable", "stop", "halt"})
    others.push_back(std::async(std::launch::async, [&, command] { return executive.transition(command); }));
  others.push_back(std::async(std::launch::async, [&] { return executive.transition(2, "configure"); }));
  others.push_back(std::async(std::launch::async, [&] {
    return executive.post("/api/applications/2/parameters", R"({"name":"level","value":"3"})");
  }));
  for (auto& other : others) {
    REQUIRE(other.wait_for(std::chrono::seconds(3)) == std::future_status::ready);  // at once, not after the hook
    const daqx::HttpReply reply = other.get();
    CHECK(reply.status == 409);
    CHECK_THAT(json_error_of(reply.body), Contains("busy: configure has been in progress for"));
  }
  const auto asked = Clock::now();
  daqx::HttpReply status = executive.get("/api/applications");
  CHECK(status.status == 200);
  CHECK(Clock::now() - asked < std::chrono::seconds(2));
  CHECK_THAT(status.body, Contains("Halted"));  // still configuring: nothing has changed state yet

  REQUIRE(slow.wait_for(std::chrono::seconds(20)) == std::future_status::ready);
  CHECK(slow.get().status == 200);
  CHECK(executive.application(1)->getValue<std::string>("state") == "Configured");
  CHECK(executive.application(2)->getValue<std::string>("state") == "Configured");
  CHECK(executive.transition("halt").status == 200);
  CHECK(executive.stop() == 0);
}

TEST_CASE("a context with applications Failed and Enabled is brought down by the context-wide stop and halt alone",
          "[executive][process][hostile][state]") {
  ProbeContext probe("mixed", {{"failIn", "enable", ""}});
  ExecutiveProcess& executive = probe.executive;
  auto state = [&](std::uint32_t tid) { return executive.application(tid)->getValue<std::string>("state"); };

  REQUIRE(executive.transition("configure").status == 200);
  CHECK(executive.transition("enable").status == 422);  // application 1 fails, application 2 is enabled
  REQUIRE(state(1) == "Failed");
  REQUIRE(state(2) == "Enabled");

  daqx::HttpReply stopped = executive.transition("stop");
  CHECK(stopped.status == 200);
  CHECK_THAT(stopped.body, Contains("stays Failed") && Contains("told to fail in enable"));
  CHECK(state(1) == "Failed");
  CHECK(state(2) == "Configured");

  // Enabled and Failed again, then halt alone: every application ends Halted.
  CHECK(executive.transition(1, "halt").status == 200);
  CHECK(executive.transition(1, "configure").status == 200);
  CHECK(executive.transition(2, "enable").status == 200);
  CHECK(executive.transition(1, "enable").status == 422);
  REQUIRE(state(1) == "Failed");
  REQUIRE(state(2) == "Enabled");
  daqx::HttpReply halted = executive.transition("halt");
  CHECK(halted.status == 200);
  CHECK(state(1) == "Halted");
  CHECK(state(2) == "Halted");

  // A stop with nothing Enabled is still refused, and says why.
  CHECK(executive.transition("stop").status == 409);
  CHECK(executive.stop() == 0);
}
