// ContextPoller and GET /api/summary against real control servers on loopback: one request per context per round
// over a fixed number of threads, a context that hangs or refuses named without holding the others, and a
// summary that carries states, counts and unlabelled counters but no help texts, parameters or connection lists.
#include <catch2/catch.hpp>

#include <Poco/Net/ServerSocket.h>
#include <Poco/Net/SocketAddress.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <set>

#include "../../../tests/support/process.hpp"
#include "daqx/control/context_poller.hpp"
#include "daqx/control/context_summary.hpp"
#include "daqx/control/control_server.hpp"

namespace {

// One Enabled application with a labelled and an unlabelled counter, a transport of `connections` connections of
// which `down` are down, one pool; every metric and parameter with a help text.
class SummaryModel final : public daqx::ControlModel {
 public:
  SummaryModel(std::size_t connections, std::size_t down) : connections_(connections), down_(down) {}
  std::string context_url() const override { return "http://127.0.0.1:1"; }
  std::string partition_name() const override { return "summary-test"; }
  std::vector<daqx::ApplicationStatus> applications() const override {
    reads.fetch_add(1);
    daqx::ApplicationStatus app;
    app.tid = 7;
    app.class_name = "test::Unit";
    app.instance = 3;
    app.name = "test/unit/3";
    app.state = daqx::State::enabled;
    app.run = 42;
    app.params = {{"depth", "u32", "4", "4", "", "a parameter's help text"}};
    app.metrics = {{"events_built", daqx::Metric::Kind::counter, 1234, "an application counter's help text", {}},
                   {"events_built", daqx::Metric::Kind::counter, 12, "per peer", {{"peer", "http://x"}}},
                   {"queue_depth", daqx::Metric::Kind::gauge, 5, "a gauge's help text", {}}};
    return {app};
  }
  std::optional<daqx::ApplicationStatus> application(daqx::Tid) const override { return applications().front(); }
  daqx::TransitionResult transition(std::optional<daqx::Tid>, daqx::Command) override { return {}; }
  std::uint64_t run_number() const override { return 42; }
  double run_seconds() const override { return 8.5; }
  std::string set_parameter(daqx::Tid, const std::string&, const std::string&) override { return "no"; }
  std::vector<daqx::PoolStatus> pools() const override {
    daqx::PoolStatus pool;
    pool.stats.name = "unit/pool";
    pool.stats.bytes_reserved = 1 << 20;
    daqx::mem::SizeClassStats size_class;
    size_class.block_size = 4096;
    size_class.blocks_total = 256;
    size_class.blocks_used = 64;
    size_class.failed_allocations = 2;
    pool.stats.classes = {size_class};
    return {pool};
  }
  std::vector<daqx::ThreadStatus> threads() const override { return {}; }
  std::vector<daqx::TransportStatus> transports() const override {
    daqx::TransportStatus transport;
    transport.protocol = "tcp";
    transport.endpoint = "tcp://127.0.0.1:2";
    transport.params = {{"sendQueue", "u32", "64", "64", "", "a transport parameter's help text"}};
    transport.metrics = {{"reconnects", daqx::Metric::Kind::counter, 3, "a transport counter's help text", {}},
                         {"connections_starved", daqx::Metric::Kind::gauge, 1, "a gauge's help text", {}}};
    for (std::size_t c = 0; c < connections_; ++c)
      transport.connections.push_back({static_cast<daqx::PeerId>(c + 1), "10.0.0." + std::to_string(c) + ":40000",
                                       c >= down_, {{"frames_sent", daqx::Metric::Kind::counter, 1, "per connection", {}}},
                                       true});
    return {transport};
  }
  std::vector<daqx::Metric> executive_metrics() const override {
    return {{"uptime_seconds", daqx::Metric::Kind::gauge, 12, "seconds since start", {}},
            {"bad_frames", daqx::Metric::Kind::counter, 0, "frames refused", {}}};
  }

  mutable std::atomic<int> reads{0};

 private:
  std::size_t connections_, down_;
};

struct Served {
  SummaryModel model;
  daqx::ControlServer server;
  std::string url;
  Served(std::size_t connections, std::size_t down)
      : model(connections, down), server(model, "127.0.0.1", 0), url("http://127.0.0.1:" + std::to_string(server.port())) {
    server.start();
  }
};

std::uint16_t unused_port() {
  Poco::Net::ServerSocket socket(Poco::Net::SocketAddress("127.0.0.1", 0));
  return socket.address().port();  // closed again: nobody listens there now
}

}  // namespace

TEST_CASE("a context poller asks every context once per round over its pool's threads, however many contexts "
          "there are", "[context-poller]") {
  // One server behind every entry: the process's threads are then the server's few and the poller's.
  Served served(2, 0);
  const std::vector<std::string> urls(40, served.url);
  const std::size_t before = daqx::test::threads_of_this_process();
  daqx::ControlRequestPool pool(12, 3);
  daqx::ContextPoller poller(pool);
  CHECK(pool.threads() == 3);
  CHECK(daqx::test::threads_of_this_process() == before + 3);
  std::size_t settled = 0;  // after the first round, once the server's own pool has grown
  for (int round = 0; round < 4; ++round) {
    std::mutex mutex;
    std::multiset<std::size_t> answered;
    std::size_t ok = 0, peak = 0;  // the most threads seen while the round is under way
    poller.round(urls, "/api/summary", std::chrono::seconds(5), [&](std::size_t index, daqx::HttpReply reply) {
      std::lock_guard lock(mutex);
      answered.insert(index);
      if (reply.status == 200) ++ok;
      peak = std::max(peak, daqx::test::threads_of_this_process());
    });
    CHECK(answered.size() == urls.size());
    CHECK(std::set<std::size_t>(answered.begin(), answered.end()).size() == urls.size());  // each once
    CHECK(ok == urls.size());
    if (round == 0) {
      settled = daqx::test::threads_of_this_process();
    } else {  // no thread per context or per round
      CHECK(peak <= settled);
      CHECK(daqx::test::threads_of_this_process() == settled);
    }
  }
  CHECK(served.model.reads.load() == 4 * 40);  // one request per entry per round
}

TEST_CASE("a context that hangs or refuses is answered as such and every other context of the round is still "
          "answered, and after stop() no round asks anything", "[context-poller]") {
  Poco::Net::ServerSocket hung(Poco::Net::SocketAddress("127.0.0.1", 0));  // accepts, never answers
  Served live(1, 0);
  std::uint16_t dead_port = unused_port();
  while (dead_port == hung.address().port() || dead_port == live.server.port()) dead_port = unused_port();
  const std::vector<std::string> urls{"http://127.0.0.1:" + std::to_string(hung.address().port()), live.url,
                                      "http://127.0.0.1:" + std::to_string(dead_port), "not a url", live.url};
  daqx::ContextPoller poller(2);
  std::vector<daqx::HttpReply> replies(urls.size());
  poller.round(urls, "/api/summary", std::chrono::milliseconds(500),
               [&](std::size_t index, daqx::HttpReply reply) { replies[index] = std::move(reply); });
  CHECK(replies[0].status == 0);
  CHECK(replies[0].timed_out);
  CHECK(replies[0].body == "no answer within 0.5 s");
  CHECK(replies[1].status == 200);
  CHECK(replies[2].status == 0);
  CHECK_THAT(replies[2].body, Catch::Contains("refused"));
  CHECK(replies[3].status == 0);
  CHECK_THAT(replies[3].body, Catch::Contains("not a context URL"));
  CHECK(replies[4].status == 200);

  poller.stop();
  int asked = 0;
  poller.round(urls, "/api/summary", std::chrono::milliseconds(500), [&](std::size_t, daqx::HttpReply) { ++asked; });
  CHECK(asked == 0);

  // Another poller on the same pool goes on: a stop is the poller's own.
  daqx::ContextPoller other(poller.pool());
  other.round({live.url}, "/api/summary", std::chrono::seconds(5), [&](std::size_t, daqx::HttpReply reply) {
    if (reply.status == 200) ++asked;
  });
  CHECK(asked == 1);
}

TEST_CASE("GET /api/summary carries states, unlabelled counters and gauges, connection counts with a few of those "
          "down, and pool levels, and no help texts, parameters or per-connection entries", "[context-poller][http]") {
  Served context(40, 20);
  const daqx::HttpReply reply = daqx::ControlClient(context.url, std::chrono::seconds(10)).get("/api/summary");
  REQUIRE(reply.status == 200);
  CHECK(reply.body.find("help") == std::string::npos);
  CHECK(reply.body.find("parameter") == std::string::npos);
  CHECK(reply.body.find("per connection") == std::string::npos);
  CHECK(reply.body.find("10.0.0.7:40000") != std::string::npos);    // among the first connections down
  CHECK(reply.body.find("10.0.0.8:40000") == std::string::npos);    // past the few listed
  const daqx::ContextSummary summary = daqx::parse_context_summary(reply.body);
  CHECK(summary.run == 42);
  CHECK(summary.run_seconds == Approx(8.5));
  CHECK(summary.uptime_seconds == Approx(12));
  REQUIRE(summary.units.size() == 1);
  const daqx::UnitSummary& unit = summary.units.front();
  CHECK(unit.name == "test/unit/3");
  CHECK(unit.class_name == "test::Unit");
  CHECK(unit.tid == 7);
  CHECK(unit.instance == 3);
  CHECK(unit.state == "Enabled");
  CHECK(unit.run == 42);
  CHECK(unit.counters.at("events_built") == 1234);  // the unlabelled one, not the per-peer one
  CHECK(unit.gauges.at("queue_depth") == 5);
  REQUIRE(summary.transports.size() == 1);
  const daqx::TransportSummary& transport = summary.transports.front();
  CHECK(transport.connections_total == 40);
  CHECK(transport.connections_up == 20);
  CHECK(transport.down.size() == 8);
  CHECK(transport.counters.at("reconnects") == 3);
  CHECK(transport.gauges.at("connections_starved") == 1);
  REQUIRE(summary.pools.size() == 1);
  CHECK(summary.pools.front().bytes_used == 64 * 4096);
  CHECK(summary.pools.front().bytes_total == 256 * 4096);
  CHECK(summary.pools.front().failed_allocations == 2);
  CHECK(summary.executive_counters.at("bad_frames") == 0);

  CHECK_THROWS_WITH(daqx::parse_context_summary("[]"), Catch::Contains("not a JSON object"));
  CHECK_THROWS_WITH(daqx::parse_context_summary("{\"run\": 1}"), Catch::Contains("\"applications\""));
}
