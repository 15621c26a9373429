// Process-level tests of the executive: real daqx-executive processes, real partition files, real HTTP.
#include <catch2/catch.hpp>

#include <numaif.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <Poco/JSON/Parser.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <optional>
#include <set>
#include <string_view>
#include <thread>

#include "../support/executive_metrics.hpp"
#include "../support/executive_process.hpp"
#include "../support/partition_builder.hpp"
#include "../support/process.hpp"
#include "daqx/services/text.hpp"

using namespace daqx::test;
using Catch::Contains;

namespace {

std::string url(std::uint16_t port) { return "http://localhost:" + std::to_string(port); }

// One context on loopback with the given body as text: for partitions with deliberate mistakes in it, which the
// builder (partition_builder.hpp) cannot write.
std::string one_context(const std::string& name, std::uint16_t port, const std::string& body) {
  return "<Partition name=\"" + name + "\">\n  <Context url=\"" + url(port) + "\">\n" + body +
         "  </Context>\n</Partition>\n";
}

// A partition of one context on loopback with one module; the caller adds the applications.
struct OneContext {
  PartitionBuilder partition;
  ContextBuilder context;
  OneContext(const std::string& name, std::uint16_t port, const std::string& module)
      : partition(name), context(partition.context(url(port))) {
    context.module(module);
  }
};

Poco::JSON::Array::Ptr json_array(const daqx::HttpReply& reply) {
  return Poco::JSON::Parser().parse(reply.body).extract<Poco::JSON::Array::Ptr>();
}

// Every block of every pool of the executive is back (none used).
void check_every_block_back(const ExecutiveProcess& executive) {
  Poco::JSON::Array::Ptr pools = json_array(executive.get("/api/pools"));
  for (std::size_t i = 0; i < pools->size(); ++i) {
    Poco::JSON::Object::Ptr pool = pools->getObject(static_cast<unsigned>(i));
    Poco::JSON::Array::Ptr classes = pool->getArray("classes");
    INFO("pool " << pool->getValue<std::string>("name"));
    for (std::size_t c = 0; c < classes->size(); ++c)
      CHECK(classes->getObject(static_cast<unsigned>(c))->getValue<double>("blocks_used") == 0);
  }
}

}  // namespace

TEST_CASE("ping-pong between two applications of one context measures round trips", "[executive][process]") {
  std::uint16_t port = free_port();
  OneContext made("pingpong", port, "libdaqx_nton.so");
  made.context.application("nton::PingPong", 2, 1).property("role", "pong");
  made.context.application("nton::PingPong", 1, 0).properties(
      {{"role", "ping", ""}, {"count", "2000", "unsigned"}, {"warmup", "100", ""}, {"frameSize", "64", ""}});
  std::string partition = write_file("pingpong.xml", made.partition.xml());
  ExecutiveProcess executive(partition, url(port));
  REQUIRE(executive.wait_ready());
  REQUIRE(executive.transition("configure").status == 200);
  REQUIRE(executive.transition("enable").status == 200);
  REQUIRE(executive.wait_metric(1, "done", 1));
  INFO(executive.output());
  CHECK(executive.metric(1, "round_trips") == 2100);  // warm-up round trips count, but are not sampled
  CHECK(executive.metric(1, "samples") == 2000);
  CHECK(executive.metric(1, "rtt_min_us") > 0);
  CHECK(executive.metric(1, "rtt_median_us") >= executive.metric(1, "rtt_min_us"));
  CHECK(executive.metric(1, "rtt_p99_us") >= executive.metric(1, "rtt_median_us"));
  CHECK(executive.transition("stop").status == 200);
  CHECK(executive.transition("halt").status == 200);
  CHECK(executive.stop() == 0);
}

TEST_CASE("N-to-N 2x2 within one context delivers every frame once, in order, with its pattern", "[executive][process]") {
  std::uint16_t port = free_port();
  OneContext made("nton-local", port, "libdaqx_nton.so");
  made.context.application("nton::Receiver", 21, 0);
  made.context.application("nton::Receiver", 22, 1);
  made.context.application("nton::Sender", 11, 0).properties(
      {{"frameSize", "8192", ""}, {"frameCount", "20000", ""}, {"window", "32", ""}});
  made.context.application("nton::Sender", 12, 1).properties(
      {{"frameSize", "3000", ""}, {"frameCount", "20000", ""}, {"window", "32", ""}});
  std::string partition = write_file("nton-2x2.xml", made.partition.xml());
  ExecutiveProcess executive(partition, url(port));
  REQUIRE(executive.wait_ready());
  REQUIRE(executive.transition("configure").status == 200);
  REQUIRE(executive.transition("enable").status == 200);
  REQUIRE(executive.wait_metric(11, "done", 1, std::chrono::seconds(60)));
  REQUIRE(executive.wait_metric(12, "done", 1, std::chrono::seconds(60)));
  REQUIRE(executive.wait_metric(21, "frames_received", 20000, std::chrono::seconds(30)));
  REQUIRE(executive.wait_metric(22, "frames_received", 20000, std::chrono::seconds(30)));
  INFO(executive.output());
  // Round-robin: each sender gives each receiver half of its frames.
  CHECK(executive.metric(21, "frames_received") == 20000);
  CHECK(executive.metric(22, "frames_received") == 20000);
  CHECK(executive.metric(21, "bytes_received") == 10000.0 * 8192 + 10000.0 * 3000);
  CHECK(executive.metric(21, "pattern_errors") == 0);
  CHECK(executive.metric(22, "sequence_errors") == 0);
  CHECK(executive.metric(11, "frames_sent") == 20000);
  CHECK(executive.transition("stop").status == 200);
  CHECK(executive.transition("halt").status == 200);
  check_every_block_back(executive);
  CHECK(executive.stop() == 0);
}

TEST_CASE("batches between applications of one context: every frame once, in order, acknowledged, to a receiver of "
          "batches in batches and to one that takes frames one at a time as single frames",
          "[executive][process][batch]") {
  std::uint16_t port = free_port();
  // Not a multiple of the batch (32) nor of the window (256): the last batches are cut short.
  constexpr double kFrames = 20003;
  OneContext made("batches-local", port, "libdaqx_nton.so");
  made.context.application("nton::Receiver", 21, 0).property("batch", "true");
  made.context.application("nton::Receiver", 22, 1).property("batch", "false");
  const auto sender = [&](std::uint32_t tid, std::uint32_t instance, const std::string& receiver) {
    made.context.application("nton::Sender", tid, instance)
        .properties({{"frameSize", "256", ""}, {"frameCount", "20003", ""}, {"window", "256", ""},
                     {"ackEvery", "64", ""}, {"batch", "32", ""}, {"receivers", receiver, ""}});
  };
  sender(11, 0, "21");
  sender(12, 1, "22");
  std::string partition = write_file("batches-local.xml", made.partition.xml());
  ExecutiveProcess executive(partition, url(port));
  REQUIRE(executive.wait_ready());
  REQUIRE(executive.transition("configure").status == 200);
  REQUIRE(executive.transition("enable").status == 200);
  for (std::uint32_t tid : {21u, 22u}) {
    const ExecutiveProcess::Progress received = executive.wait_progress(tid, "frames_received", kFrames);
    INFO("receiver " << tid << ": " << received.trace << "\n" << executive.output());
    REQUIRE(received.reached);
  }
  for (std::uint32_t tid : {11u, 12u}) {
    INFO("sender " << tid);
    REQUIRE(executive.wait_metric(tid, "done", 1));
    CHECK(executive.metric(tid, "frames_sent") == kFrames);
    CHECK(executive.metric(tid, "outstanding") == 0);  // every frame acknowledged
    CHECK(executive.metric(tid, "send_errors") == 0);
  }
  for (std::uint32_t tid : {21u, 22u}) {
    INFO("receiver " << tid);
    CHECK(executive.metric(tid, "frames_received") == kFrames);
    CHECK(executive.metric(tid, "sequence_errors") == 0);
    CHECK(executive.metric(tid, "pattern_errors") == 0);
    CHECK(executive.metric(tid, "malformed_frames") == 0);
    CHECK(executive.metric(tid, "frames_dispatched") == kFrames);
  }
  // The receiver of batches got them as batches (how large depends on timing: only that they formed); the other
  // one frame a call.
  const double batches = executive.metric(21, "batches_dispatched");
  INFO(batches << " batches");
  CHECK(batches > 0);
  CHECK(kFrames / batches > 1);
  CHECK(executive.metric(22, "batches_dispatched") == 0);
  CHECK(executive.transition("stop").status == 200);
  CHECK(executive.transition("halt").status == 200);
  check_every_block_back(executive);
  CHECK(executive.stop() == 0);
}

TEST_CASE("a frame between applications of one context is handed over without a copy", "[executive][process]") {
  std::uint16_t port = free_port();
  OneContext made("probe", port, "libdaqx_test_probe.so");
  made.context.application("test::Probe", 5);
  made.context.application("test::Probe", 4, 1).property("peer", "5");
  std::string partition = write_file("probe.xml", made.partition.xml());
  ExecutiveProcess executive(partition, url(port));
  REQUIRE(executive.wait_ready());
  REQUIRE(executive.transition("configure").status == 200);
  REQUIRE(executive.transition("enable").status == 200);
  REQUIRE(executive.wait_metric(5, "probe_received", 1));
  double sent = executive.metric(4, "probe_sent_block_address");
  double received = executive.metric(5, "probe_received_block_address");
  CHECK(sent != 0);
  CHECK(sent == received);  // the same block: no copy on the way
  CHECK(executive.metric(5, "probe_received_initiator") == 4);
  CHECK(executive.metric(5, "probe_received_word") == static_cast<double>(0x5eed0000ULL + 4));
  CHECK(executive.stop() == 0);
}

TEST_CASE("the state machine refuses illegal transitions and keeps the reason of a failure", "[executive][process]") {
  std::uint16_t port = free_port();
  OneContext made("fsm", port, "libdaqx_test_probe.so");
  made.context.application("test::Probe", 1);
  made.context.application("test::Probe", 2, 1).property("failIn", "enable");
  std::string partition = write_file("fsm.xml", made.partition.xml());
  ExecutiveProcess executive(partition, url(port));
  REQUIRE(executive.wait_ready());
  auto state = [&](std::uint32_t tid) { return executive.application(tid)->getValue<std::string>("state"); };
  CHECK(state(1) == "Halted");
  daqx::HttpReply refused = executive.transition(1, "enable");
  CHECK(refused.status == 409);
  CHECK_THAT(refused.body, Contains("Halted"));
  CHECK(executive.transition(1, "configure").status == 200);
  CHECK(state(1) == "Configured");
  CHECK(executive.transition(1, "configure").status == 409);
  CHECK(executive.transition(1, "enable").status == 200);
  CHECK(state(1) == "Enabled");
  CHECK(executive.transition(1, "halt").status == 409);  // stop first
  CHECK(executive.transition(1, "stop").status == 200);
  CHECK(executive.transition(1, "halt").status == 200);
  CHECK(state(1) == "Halted");

  // A context-wide command is refused whole when any application cannot take it.
  CHECK(executive.transition(1, "configure").status == 200);
  daqx::HttpReply partial = executive.transition("enable");
  CHECK(partial.status == 409);
  CHECK_THAT(partial.body, Contains("nothing done") && Contains("application 2"));
  CHECK(state(1) == "Configured");
  CHECK(executive.transition(1, "halt").status == 200);

  CHECK(executive.transition(2, "configure").status == 200);
  daqx::HttpReply failed = executive.transition(2, "enable");
  CHECK(failed.status == 422);  // the application refused: not daqx's fault
  CHECK_THAT(failed.body, Contains("told to fail in enable"));
  CHECK(state(2) == "Failed");
  CHECK_THAT(executive.application(2)->getValue<std::string>("reason"), Contains("told to fail in enable"));
  CHECK_THAT(executive.get("/").body, Contains("told to fail in enable"));  // on the status page too
  CHECK(executive.transition(2, "halt").status == 200);  // recovery
  CHECK(state(2) == "Halted");
  CHECK(executive.stop() == 0);
}

TEST_CASE("the policy pins threads and binds pools, as the kernel reports", "[executive][process][policy]") {
  std::uint16_t port = free_port();
  int last_cpu = static_cast<int>(std::thread::hardware_concurrency()) - 1;
  OneContext made("policy", port, "libdaqx_test_probe.so");
  made.partition.thread_rule("test/probe/*/dispatch", std::to_string(last_cpu)).pool_rule("test/probe/*/pool", "numa:0");
  made.context.application("test::Probe", 1);
  std::string partition = write_file("policy.xml", made.partition.xml());
  ExecutiveProcess executive(partition, url(port));
  REQUIRE(executive.wait_ready());
  Poco::JSON::Array::Ptr threads = json_array(executive.get("/api/threads"));
  bool found = false;
  for (std::size_t i = 0; i < threads->size(); ++i) {
    Poco::JSON::Object::Ptr t = threads->getObject(static_cast<unsigned>(i));
    if (t->getValue<std::string>("name") != "test/probe/0/dispatch") continue;
    found = true;
    // Read the affinity of that kernel thread ourselves, not what the executive says.
    cpu_set_t set;
    CPU_ZERO(&set);
    REQUIRE(sched_getaffinity(t->getValue<int>("kernel_tid"), sizeof set, &set) == 0);
    CHECK(CPU_COUNT(&set) == 1);
    CHECK(CPU_ISSET(last_cpu, &set));
  }
  CHECK(found);
  Poco::JSON::Array::Ptr pools = json_array(executive.get("/api/pools"));
  bool pool_found = false;
  for (std::size_t i = 0; i < pools->size(); ++i) {
    Poco::JSON::Object::Ptr p = pools->getObject(static_cast<unsigned>(i));
    if (p->getValue<std::string>("name") != "test/probe/0/pool") continue;
    pool_found = true;
    CHECK(p->getValue<int>("numa_node") == 0);
    Poco::JSON::Array::Ptr chunks = p->getArray("chunks");
    REQUIRE(chunks->size() > 0);
    // move_pages on the executive's own address space: where its pool pages really are.
    auto address = chunks->getObject(0)->getValue<std::uint64_t>("address");
    void* page = reinterpret_cast<void*>(address);
    int status = -1;
    REQUIRE(move_pages(executive.pid(), 1, &page, nullptr, &status, 0) == 0);
    CHECK(status == 0);
  }
  CHECK(pool_found);
  CHECK(executive.stop() == 0);
}

TEST_CASE("mistakes only the modules can reveal are reported as file:line: reason before anything starts",
          "[executive][process][config]") {
  std::uint16_t port = free_port();
  std::uint16_t other = free_port();
  struct Case {
    std::string name, body, expect;
    int line;
  };
  std::vector<Case> cases = {
      {"missing-module", "    <Module path=\"libdaqx_nowhere.so\"/>\n", "module 'libdaqx_nowhere.so' not found", 3},
      {"not-a-module", "    <Module path=\"" + module_directory() + "/../mempool/libdaqx_mempool.so\"/>\n",
       "is not a daqx module", 3},
      {"broken-file", "    <Module path=\"" + scratch_directory() + "/garbage.so\"/>\n", "cannot load module", 3},
      {"unknown-class", "    <Module path=\"libdaqx_test_probe.so\"/>\n    <Application class=\"test::Nope\" id=\"1\"/>\n",
       "unknown application class 'test::Nope'", 4},
      {"unknown-protocol",
       "    <Endpoint protocol=\"carrier-pigeon\" hostname=\"localhost\" port=\"" + std::to_string(other) +
           "\" network=\"data\"/>\n",
       "carrier-pigeon", 3},
      {"unknown-property",
       "    <Module path=\"libdaqx_test_probe.so\"/>\n    <Application class=\"test::Probe\" id=\"1\">\n"
       "      <Properties><colour>red</colour></Properties>\n    </Application>\n",
       "colour", 5},
      {"out-of-range",
       "    <Module path=\"libdaqx_test_probe.so\"/>\n    <Application class=\"test::Probe\" id=\"1\">\n"
       "      <Properties><level>11</level></Properties>\n    </Application>\n",
       "maximum", 5},
      {"unknown-peer",
       "    <Module path=\"libdaqx_test_probe.so\"/>\n    <Application class=\"test::Probe\" id=\"1\">\n"
       "      <Properties><peer>99</peer></Properties>\n    </Application>\n",
       "99", 5},
  };
  write_file("garbage.so", "this is not an ELF file");
  for (const Case& c : cases) {
    SECTION(c.name) {
      std::string path = write_file(c.name + ".xml", one_context(c.name, port, c.body));
      ProcessResult result = run_process({executive_program(), "--config", path, "--context", url(port)},
                                         std::chrono::seconds(30), {"DAQX_MODULE_PATH=" + module_directory()});
      INFO(result.output);
      CHECK(result.exit_code == 2);
      CHECK_THAT(result.output, Contains(path + ":" + std::to_string(c.line) + ": ") && Contains(c.expect));
    }
  }
  SECTION("a context the partition does not have") {
    PartitionBuilder partition("x");
    partition.context(url(port));
    std::string path = write_file("no-such-context.xml", partition.xml());
    ProcessResult result = run_process({executive_program(), "--config", path, "--context", url(other)},
                                       std::chrono::seconds(30));
    CHECK(result.exit_code == 2);
    CHECK_THAT(result.output, Contains("is not in this partition"));
  }
}

TEST_CASE("an application may only select peers it shares a network with", "[executive][process][config]") {
  std::uint16_t a = free_port(), b = free_port(), ea = free_port(), eb = free_port();
  PartitionBuilder nets("nets");
  ContextBuilder first = nets.context(url(a));
  first.endpoint("tcp", "localhost", ea, "alpha");
  first.module("libdaqx_test_probe.so");
  first.application("test::Probe", 1, std::nullopt, "alpha").property("peer", "2");
  ContextBuilder second = nets.context(url(b));
  second.endpoint("tcp", "localhost", eb, "beta");
  second.module("libdaqx_test_probe.so");
  second.application("test::Probe", 2, 1, "beta");
  const std::string xml = nets.xml();
  // The error names the line of the parameter that selects a peer on another network.
  const std::size_t at = xml.find("<peer");
  REQUIRE(at != std::string::npos);
  const auto line = 1 + std::count(xml.begin(), xml.begin() + static_cast<std::ptrdiff_t>(at), '\n');
  std::string path = write_file("nets.xml", xml);
  ProcessResult result = run_process({executive_program(), "--config", path, "--context", url(a)},
                                     std::chrono::seconds(30), {"DAQX_MODULE_PATH=" + module_directory()});
  INFO(result.output);
  CHECK(result.exit_code == 2);
  CHECK_THAT(result.output, Contains(path + ":" + std::to_string(line) + ": ") && Contains("shares no network"));
}

TEST_CASE("no control request can crash an executive", "[executive][process][http]") {
  std::uint16_t port = free_port();
  OneContext made("robust", port, "libdaqx_test_probe.so");
  made.context.application("test::Probe", 1);
  std::string partition = write_file("robust.xml", made.partition.xml());
  ExecutiveProcess executive(partition, url(port));
  REQUIRE(executive.wait_ready());
  CHECK(executive.get("/no/such/page").status == 404);
  CHECK(executive.get("/api/applications/77").status == 404);
  CHECK(executive.get("/api/applications/seven").status == 400);
  CHECK(executive.post("/api/transition", "{not json").status == 400);
  CHECK(executive.post("/api/transition", "{\"command\":\"explode\"}").status == 400);
  CHECK(executive.post("/api/applications/1/transition", "").status == 400);
  CHECK(executive.post("/api/applications/1/parameters", "{\"name\":\"level\",\"value\":\"99\"}").status >= 400);
  CHECK(executive.post("/api/applications/1/parameters", "{\"name\":\"level\",\"value\":\"3\"}").status == 200);
  CHECK(executive.post("/metrics", "").status == 405);
  daqx::HttpReply metrics = executive.get("/metrics");
  CHECK(metrics.status == 200);
  CHECK_THAT(metrics.body, Contains("daqx_application_frames_dispatched_total{"));
  CHECK_THAT(metrics.body, Contains("daqx_pool_blocks{"));
  CHECK(executive.get("/api/applications").status == 200);  // still serving
  Poco::JSON::Object::Ptr app = executive.application(1);
  REQUIRE(app);
  Poco::JSON::Array::Ptr params = app->getArray("parameters");
  bool level_seen = false;
  for (std::size_t i = 0; i < params->size(); ++i)
    if (params->getObject(static_cast<unsigned>(i))->getValue<std::string>("name") == "level") {
      level_seen = true;
      CHECK(params->getObject(static_cast<unsigned>(i))->getValue<std::string>("value") == "3");
    }
  CHECK(level_seen);
  CHECK(executive.stop() == 0);
}

TEST_CASE("daqx-executive --list-params prints every parameter of a module", "[executive][process]") {
  ProcessResult result = run_process({executive_program(), "--list-params", "libdaqx_nton.so"}, std::chrono::seconds(30),
                                     {"DAQX_MODULE_PATH=" + module_directory()});
  INFO(result.output);
  CHECK(result.exit_code == 0);
  CHECK_THAT(result.output, Contains("application nton::Sender") && Contains("frameSize") && Contains("window") &&
                                Contains("application nton::Receiver") && Contains("application nton::PingPong"));
}

TEST_CASE("an executive that faults says so in its log, with the signal and a backtrace, and still ends by that signal",
          "[executive][process]") {
  std::uint16_t port = free_port();
  PartitionBuilder fault("fault");
  fault.context(url(port));
  std::string partition = write_file("fault.xml", fault.xml());
  ExecutiveProcess executive(partition, url(port));
  REQUIRE(executive.wait_ready());
  REQUIRE(::kill(executive.pid(), SIGSEGV) == 0);
  REQUIRE(wait_until([&] { return !executive.running(); }, std::chrono::seconds(20)));
  INFO(executive.output());
#if defined(__SANITIZE_ADDRESS__)
  // Under AddressSanitizer its own report stands in for ours.
  CHECK_THAT(executive.output(), Contains("AddressSanitizer"));
#else
  CHECK_THAT(executive.output(), Contains("fatal executive: killed by SIGSEGV"));
  CHECK_THAT(executive.output(), Contains("backtrace"));
  CHECK_THAT(executive.output(), Contains("daqx-executive"));  // the frames name their modules
  CHECK(executive.stop() == 128 + SIGSEGV);
#endif
}

TEST_CASE("a partition whose names hold a byte that is not UTF-8 or a control character is refused at load with "
          "its line, and names with markup and characters beyond ASCII show on every page and JSON answer as valid UTF-8 "
          "and every JSON answer parses", "[executive][process]") {
  std::uint16_t port = free_port();
  const std::string body = R"(
    <Module path="libdaqx_nton.so"/>
    <Application class="nton::PingPong" id="2" instance="1"><Properties><role>pong</role></Properties></Application>
    <Application class="nton::PingPong" id="1" instance="0"><Properties><role>ping</role></Properties></Application>
)";
  // Not XML: refused before anything starts, naming the file, the line and the byte.
  for (const auto& [name, reason] : {std::pair<std::string, std::string>{"p-\xff", "a byte that is not UTF-8 (\\xff)"},
                                     {"p-\x01", "a control character (\\x01)"}}) {
    const std::string bad = write_file("stray-bytes.xml", one_context(name, port, body));
    const ProcessResult refused =
        run_process({executive_program(), "--config", bad, "--context", url(port)}, std::chrono::seconds(30));
    INFO(refused.output);
    CHECK(refused.exit_code == 2);
    CHECK_THAT(refused.output, Contains(bad + ":1: malformed XML: " + reason));
  }
  // Markup (escaped, as well-formed XML has it) and characters of several bytes: shown on every page and in the
  // JSON API.
  std::string partition = write_file("names.xml", one_context("p-\xc3\xa9\xe2\x82\xac-&lt;b&gt;", port, body));
  ExecutiveProcess executive(partition, url(port));
  REQUIRE(executive.wait_ready());
  REQUIRE(executive.transition("configure").status == 200);
  for (const char* path : {"/", "/app/1", "/partition", "/api/executive", "/api/applications", "/api/applications/1",
                           "/api/summary", "/api/partition", "/api/nothing", "/nothing"}) {
    INFO(path);
    const daqx::HttpReply reply = executive.get(path);
    CHECK(daqx::strings::valid_utf8(reply.body) == reply.body);
    if (std::string_view(path).starts_with("/api/")) CHECK_NOTHROW(Poco::JSON::Parser().parse(reply.body));
  }
  for (const char* page : {"/", "/app/1", "/partition"}) {
    INFO(page);
    CHECK(executive.get(page).body.find("p-\xc3\xa9\xe2\x82\xac-&lt;b&gt;") != std::string::npos);
  }
  const auto executive_json = Poco::JSON::Parser().parse(executive.get("/api/executive").body)
                                  .extract<Poco::JSON::Object::Ptr>();
  CHECK(executive_json->getValue<std::string>("partition") == "p-\xc3\xa9\xe2\x82\xac-<b>");
  CHECK(executive.stop() == 0);
}

TEST_CASE("free_port never gives two test programs running at once the same port", "[executive][process]") {
  // Two children pick ports as two test programs under ctest -j2 would, each holding its ports until both are
  // done. Chosen at random alone, 1500 picks each of about 22,000 ports would share about a hundred.
  constexpr int kPicks = 1500;
  std::vector<std::set<std::uint16_t>> picked(2);
  std::vector<pid_t> children;
  int go[2];
  REQUIRE(pipe(go) == 0);
  std::vector<int> results;
  for (int child = 0; child < 2; ++child) {
    int out[2];
    REQUIRE(pipe(out) == 0);
    const pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      close(out[0]);
      close(go[1]);
      for (int i = 0; i < kPicks; ++i) {
        const std::uint16_t port = free_port();
        if (write(out[1], &port, sizeof port) != static_cast<ssize_t>(sizeof port)) _exit(2);
      }
      close(out[1]);
      char ignored;
      while (read(go[0], &ignored, 1) > 0) {
      }  // until the parent has both lists: the claims last as long as the program that made them
      _exit(0);
    }
    close(out[1]);
    children.push_back(pid);
    results.push_back(out[0]);
  }
  close(go[0]);
  for (std::size_t child = 0; child < results.size(); ++child) {
    std::uint16_t port = 0;
    while (read(results[child], &port, sizeof port) == static_cast<ssize_t>(sizeof port)) picked[child].insert(port);
    close(results[child]);
  }
  close(go[1]);
  for (pid_t pid : children) {
    int status = 0;
    REQUIRE(waitpid(pid, &status, 0) == pid);
    CHECK((WIFEXITED(status) && WEXITSTATUS(status) == 0));
  }
  CHECK(picked[0].size() == static_cast<std::size_t>(kPicks));
  CHECK(picked[1].size() == static_cast<std::size_t>(kPicks));
  std::vector<std::uint16_t> shared;
  std::set_intersection(picked[0].begin(), picked[0].end(), picked[1].begin(), picked[1].end(),
                        std::back_inserter(shared));
  INFO(shared.size() << " ports given to both");
  CHECK(shared.empty());
}
