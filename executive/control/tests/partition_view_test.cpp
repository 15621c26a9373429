// PartitionView against real control servers on loopback: one that answers, a port nobody listens on, and a port
// that accepts and never answers; what the view says of each, its rates, and its escaping.
#include <catch2/catch.hpp>

#include <Poco/JSON/Object.h>
#include <Poco/JSON/Parser.h>
#include <Poco/Net/ServerSocket.h>
#include <Poco/Net/SocketAddress.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "daqx/control/control_client.hpp"
#include "daqx/control/control_server.hpp"
#include "../../../tests/support/partition_builder.hpp"
#include "daqx/executive/partition.hpp"
#include "daqx/control/partition_view.hpp"

namespace {

using Clock = std::chrono::steady_clock;
using Poco::JSON::Object;

// One application whose name and reason hold markup, and whose counters move as the test says.
class MovingModel final : public daqx::ControlModel {
 public:
  explicit MovingModel(std::string url) : url_(std::move(url)) {}
  std::string context_url() const override { return url_; }
  std::string partition_name() const override { return "view <test>"; }
  std::vector<daqx::ApplicationStatus> applications() const override {
    reads.fetch_add(1);
    daqx::ApplicationStatus app;
    app.tid = 1;
    app.class_name = "test::Unit<&>";
    app.name = "test/unit/0";
    app.state = daqx::State::failed;
    app.reason = "<b>disk & \"full\"</b>";
    const double built = static_cast<double>(events.load());
    app.metrics = {{"events_built", daqx::Metric::Kind::counter, built, "events", {}},
                   {"bytes_built", daqx::Metric::Kind::counter, built * 1000, "bytes", {}}};
    // Subscriptions to its stream "events", as a streams::Publisher reports them: the last two are dropping.
    const std::size_t count = subscriptions.load();
    for (std::size_t i = 0; i < count; ++i) {
      const std::vector<std::pair<std::string, std::string>> labels{
          {"stream", "events"}, {"subscriber", "tid " + std::to_string(1000 + i)}, {"policy", "drop-newest"}};
      const double dropped = i + 2 >= count ? built : 0;
      app.metrics.push_back({"subscriber_delivered", daqx::Metric::Kind::counter, built, "", labels});
      app.metrics.push_back({"subscriber_dropped", daqx::Metric::Kind::counter, dropped, "", labels});
      app.metrics.push_back({"subscriber_skipped", daqx::Metric::Kind::counter, 0, "", labels});
      app.metrics.push_back({"subscriber_queued", daqx::Metric::Kind::gauge, 3, "", labels});
      app.metrics.push_back({"subscriber_lag", daqx::Metric::Kind::gauge, 5, "", labels});
    }
    return {app};
  }
  std::optional<daqx::ApplicationStatus> application(daqx::Tid tid) const override {
    if (tid != 1) return std::nullopt;
    return applications().front();
  }
  daqx::TransitionResult transition(std::optional<daqx::Tid>, daqx::Command) override { return {}; }
  std::string set_parameter(daqx::Tid, const std::string&, const std::string&) override { return "no"; }
  std::vector<daqx::PoolStatus> pools() const override {
    daqx::PoolStatus pool;
    pool.stats.name = "unit/pool";
    pool.stats.bytes_reserved = 1 << 20;
    daqx::mem::SizeClassStats size_class;
    size_class.block_size = 4096;
    size_class.blocks_total = 256;
    size_class.blocks_used = 64;
    pool.stats.classes = {size_class};
    return {pool};
  }
  std::vector<daqx::ThreadStatus> threads() const override { return {}; }
  std::vector<daqx::TransportStatus> transports() const override {
    daqx::TransportStatus transport;
    transport.protocol = "tcp";
    transport.endpoint = "tcp://127.0.0.1:1";
    transport.connections = {{2, "10.0.0.2:40000", true, {}, true}, {3, "10.0.0.3:40000", false, {}, true}};
    return {transport};
  }
  std::vector<daqx::Metric> executive_metrics() const override {
    return {{"uptime_seconds", daqx::Metric::Kind::gauge, 12, "", {}}};
  }

  mutable std::atomic<int> reads{0};
  std::atomic<std::uint64_t> events{0};
  std::atomic<std::size_t> subscriptions{0};

 private:
  std::string url_;
};

std::uint16_t unused_port() {
  Poco::Net::ServerSocket socket(Poco::Net::SocketAddress("127.0.0.1", 0));
  return socket.address().port();  // closed again: nobody listens there now
}

struct ThreeContexts {
  // A port that accepts connections (the kernel's backlog) and never reads or answers them.
  Poco::Net::ServerSocket hung{Poco::Net::SocketAddress("127.0.0.1", 0)};
  std::uint16_t dead_port = unused_port();
  std::unique_ptr<MovingModel> model;
  std::unique_ptr<daqx::ControlServer> server;
  std::string served_url, dead_url, hung_url;
  daqx::config::Partition partition;

  ThreeContexts() {
    // The server's port first, then the model that names it.
    MovingModel probe("http://127.0.0.1:0");
    auto first = std::make_unique<daqx::ControlServer>(probe, "127.0.0.1", 0);
    const std::uint16_t port = first->port();
    first.reset();
    // dead_port was closed again, so the kernel may hand it to the server just now (the sanitizer CI saw the
    // "dead" context answer as the served one): the dead context's port must be neither of the others.
    while (dead_port == port || dead_port == hung.address().port()) dead_port = unused_port();
    served_url = "http://127.0.0.1:" + std::to_string(port);
    model = std::make_unique<MovingModel>(served_url);
    server = std::make_unique<daqx::ControlServer>(*model, "127.0.0.1", port);
    server->start();
    dead_url = "http://127.0.0.1:" + std::to_string(dead_port);
    hung_url = "http://127.0.0.1:" + std::to_string(hung.address().port());
    daqx::test::PartitionBuilder built("view-test");
    built.context(served_url).application("test::Unit", 1);
    built.context(dead_url).application("test::Dead", 2);
    built.context(hung_url).application("test::Hung", 3);
    partition = daqx::config::parse_partition(built.xml(), "view-test.xml");
  }
};

// Moves the model's counters (100 events every 10 ms) from a thread of its own until stopped.
class MovingCounter {
 public:
  explicit MovingCounter(MovingModel& model)
      : thread_([&model](std::stop_token stop) {
          while (!stop.stop_requested()) {
            model.events.fetch_add(100);
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
          }
        }) {}
  void stop() {
    thread_.request_stop();
    if (thread_.joinable()) thread_.join();
  }

 private:
  std::jthread thread_;
};

daqx::PartitionViewOptions quick() {
  daqx::PartitionViewOptions options;
  options.interval = std::chrono::milliseconds(200);
  options.timeout = std::chrono::milliseconds(500);
  return options;
}

Object::Ptr parse(const std::string& json) {
  Poco::JSON::Parser parser;
  return parser.parse(json).extract<Object::Ptr>();
}

Object::Ptr context(const Object::Ptr& view, std::size_t index) {
  return view->getArray("contexts")->getObject(static_cast<unsigned>(index));
}

// Asks the view until `done` holds of its JSON or 10 s pass; the last JSON.
template <typename Done>
Object::Ptr until(daqx::PartitionView& view, Done done) {
  const auto deadline = Clock::now() + std::chrono::seconds(10);
  Object::Ptr last = parse(view.json());
  while (!done(last) && Clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    last = parse(view.json());
  }
  return last;
}

}  // namespace

TEST_CASE("a partition view polls nothing until asked for, then tells a context that answers from one that refuses "
          "and one that hangs, with the reasons", "[partition-view]") {
  ThreeContexts contexts;
  daqx::PartitionView view(contexts.partition, {}, quick());
  view.start();
  std::this_thread::sleep_for(std::chrono::milliseconds(600));
  CHECK(contexts.model->reads.load() == 0);  // nobody watches: nobody is polled

  const Object::Ptr seen = until(view, [](const Object::Ptr& v) {
    return context(v, 0)->getValue<std::string>("status") == "up" &&
           context(v, 1)->getValue<std::string>("status") == "unreachable" &&
           context(v, 2)->getValue<std::string>("status") == "unreachable";
  });
  INFO(seen->getArray("contexts")->size());
  REQUIRE(context(seen, 0)->getValue<std::string>("status") == "up");
  CHECK(context(seen, 0)->getArray("applications")->getObject(0)->getValue<std::string>("state") == "Failed");
  REQUIRE(context(seen, 1)->getValue<std::string>("status") == "unreachable");
  CHECK_THAT(context(seen, 1)->getValue<std::string>("reason"), Catch::Contains("refused"));
  CHECK(context(seen, 1)->isNull("last_seen_ms"));
  // Known from the partition while its context does not answer.
  CHECK(context(seen, 1)->getArray("applications")->getObject(0)->getValue<std::string>("class") == "test::Dead");
  CHECK(context(seen, 1)->getArray("applications")->getObject(0)->getValue<std::string>("state") == "Unknown");
  REQUIRE(context(seen, 2)->getValue<std::string>("status") == "unreachable");
  CHECK_THAT(context(seen, 2)->getValue<std::string>("reason"), Catch::StartsWith("no answer within "));
  const Object::Ptr totals = seen->getObject("totals");
  CHECK(totals->getValue<int>("contexts_unreachable") == 2);
  CHECK(totals->getValue<int>("failed") == 1);
  CHECK(totals->getValue<int>("connections_up") == 1);
  CHECK(totals->getValue<int>("connections_down") == 1);
  const Object::Ptr pool = context(seen, 0)->getArray("pools")->getObject(0);
  CHECK(pool->getValue<std::uint64_t>("bytes_used") == 64 * 4096);
  view.stop();
}

TEST_CASE("a partition view's rates come from counter differences, and a context that stops answering keeps its "
          "applications, turns unreachable and says when it was last seen", "[partition-view]") {
  ThreeContexts contexts;
  daqx::PartitionView view(contexts.partition, {}, quick());
  view.start();
  MovingCounter moving(*contexts.model);
  const Object::Ptr rated = until(view, [](const Object::Ptr& v) {
    const Object::Ptr app = context(v, 0)->getArray("applications")->getObject(0);
    return !app->isNull("events_per_second") && app->getValue<double>("events_per_second") > 0;
  });
  moving.stop();
  const Object::Ptr app = context(rated, 0)->getArray("applications")->getObject(0);
  REQUIRE_FALSE(app->isNull("events_per_second"));
  CHECK(app->getValue<double>("events_per_second") > 0);
  CHECK(app->getValue<double>("bytes_per_second") == Approx(app->getValue<double>("events_per_second") * 1000));
  const Poco::JSON::Array::Ptr kinds = rated->getArray("kinds");  // by class: Dead, Hung, Unit
  REQUIRE(kinds->size() == 3);
  CHECK(kinds->getObject(2)->getValue<std::string>("class") == "test::Unit<&>");
  CHECK(kinds->getObject(2)->getValue<double>("events_per_second") > 0);
  CHECK(kinds->getObject(0)->isNull("events_per_second"));

  contexts.server->stop();
  const Object::Ptr gone = until(view, [](const Object::Ptr& v) {
    return context(v, 0)->getValue<std::string>("status") == "unreachable";
  });
  REQUIRE(context(gone, 0)->getValue<std::string>("status") == "unreachable");
  CHECK_FALSE(context(gone, 0)->isNull("last_seen_ms"));
  const Object::Ptr kept = context(gone, 0)->getArray("applications")->getObject(0);
  CHECK(kept->getValue<std::string>("name") == "test/unit/0");
  CHECK(kept->getValue<std::string>("state") == "Unknown");
  CHECK(kept->isNull("events_per_second"));
  view.stop();
}

TEST_CASE("each subscription to an application's stream is a row of the partition's JSON and page with its rates, "
          "the summary lists the first 32 of an application's and counts all, and the page puts those dropping first",
          "[partition-view][stream]") {
  ThreeContexts contexts;
  contexts.model->subscriptions = 32;  // the summary's limit per application
  constexpr std::size_t kAll = 40;
  daqx::PartitionView view(contexts.partition, {}, quick());
  view.start();
  MovingCounter moving(*contexts.model);
  // Rates need two answers; the last two of the 32 listed (tid 1030, 1031) drop as they deliver.
  const Object::Ptr rated = until(view, [](const Object::Ptr& v) {
    const Poco::JSON::Array::Ptr rows = context(v, 0)->getArray("applications")->getObject(0)->getArray("subscriptions");
    if (!rows || rows->size() == 0) return false;
    const Object::Ptr last = rows->getObject(static_cast<unsigned>(rows->size() - 1));
    return !last->isNull("dropped_per_second") && last->getValue<double>("dropped_per_second") > 0;
  });
  const Object::Ptr app = context(rated, 0)->getArray("applications")->getObject(0);
  const Poco::JSON::Array::Ptr rows = app->getArray("subscriptions");
  REQUIRE(rows->size() == 32);
  CHECK(app->getValue<std::size_t>("subscriptions_total") == 32);
  const Object::Ptr first = rows->getObject(0);
  CHECK(first->getValue<std::string>("stream") == "events");
  CHECK(first->getValue<std::string>("subscriber") == "tid 1000");
  CHECK(first->getValue<std::string>("policy") == "drop-newest");
  CHECK(first->getValue<double>("delivered_per_second") > 0);
  CHECK(first->getValue<double>("dropped_per_second") == 0);
  CHECK(first->getValue<double>("queued") == 3);
  CHECK(first->getValue<double>("lag") == 5);
  CHECK(rows->getObject(31)->getValue<std::string>("subscriber") == "tid 1031");
  CHECK(rows->getObject(31)->getValue<double>("dropped_per_second") > 0);

  // The page (as the server draws it, before its script): every listed subscription a row, the two dropping ones
  // first and marked.
  const std::string html = view.html();
  const std::string page = html.substr(0, html.find("<script>"));
  std::size_t row_count = 0;
  for (std::size_t at = page.find("<tr class=\"subscription\""); at != std::string::npos;
       at = page.find("<tr class=\"subscription\"", at + 1))
    ++row_count;
  CHECK(row_count == 32);
  const std::size_t first_row = page.find("<tr class=\"subscription\"");
  REQUIRE(first_row != std::string::npos);
  const std::string first_html = page.substr(first_row, page.find("</tr>", first_row) - first_row);
  CHECK_THAT(first_html, Catch::Contains("tid 1030") && Catch::Contains("dropped warn"));

  // More subscriptions than the summary lists: the first 32, and the count of all.
  contexts.model->subscriptions = kAll;
  const Object::Ptr more = until(view, [](const Object::Ptr& v) {
    return v->getObject("totals")->getValue<std::size_t>("subscriptions") == kAll;
  });
  moving.stop();
  CHECK(more->getObject("totals")->getValue<std::size_t>("subscriptions") == kAll);
  CHECK(context(more, 0)->getArray("applications")->getObject(0)->getArray("subscriptions")->size() == 32);
  CHECK_THAT(view.html(), Catch::Contains("32 of 40 subscriptions listed"));
  view.stop();
}

TEST_CASE("the partition page and JSON carry names and reasons escaped, and the control server serves them only "
          "when given a view", "[partition-view][http]") {
  ThreeContexts contexts;
  daqx::PartitionView view(contexts.partition, {}, quick());
  view.start();
  until(view, [](const Object::Ptr& v) { return context(v, 0)->getValue<std::string>("status") == "up"; });
  const std::string html = view.html();
  CHECK_THAT(html, Catch::Contains("&lt;b&gt;disk &amp; &quot;full&quot;&lt;/b&gt;"));
  CHECK_THAT(html, Catch::Contains("test::Unit&lt;&amp;&gt;"));
  CHECK_THAT(html, !Catch::Contains("<b>disk"));
  CHECK_THAT(html, !Catch::Contains("Unit<&>"));
  CHECK_THAT(html, Catch::Contains("<noscript>"));
  const Object::Ptr json = parse(view.json());
  CHECK(context(json, 0)->getArray("applications")->getObject(0)->getValue<std::string>("reason") ==
        "<b>disk & \"full\"</b>");

  MovingModel model("http://127.0.0.1:9");
  daqx::ControlServer with_view(model, "127.0.0.1", 0, 2, {}, &view);
  with_view.start();
  const daqx::ControlClient client("http://127.0.0.1:" + std::to_string(with_view.port()), std::chrono::seconds(10));
  CHECK(client.get("/partition").status == 200);
  CHECK(parse(client.get("/api/partition").body)->getValue<std::string>("partition") == "view-test");
  CHECK_THAT(client.get("/").body, Catch::Contains("href=\"/partition\""));
  CHECK(client.post("/api/partition", "{}").status == 405);
  with_view.stop();

  daqx::ControlServer without_view(model, "127.0.0.1", 0);
  without_view.start();
  const daqx::ControlClient plain("http://127.0.0.1:" + std::to_string(without_view.port()), std::chrono::seconds(10));
  CHECK(plain.get("/api/partition").status == 404);
  CHECK(plain.get("/partition").status == 404);
  CHECK_THAT(plain.get("/").body, !Catch::Contains("href=\"/partition\""));
  without_view.stop();
  view.stop();
}
