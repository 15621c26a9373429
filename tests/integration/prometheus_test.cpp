// daqx under real monitoring tools: promtool checks every executive's /metrics for every kind of partition we
// ship, a real Prometheus scrapes a running event builder, and the Grafana dashboard in docs/ uses only names a
// running partition exports.
#include <catch2/catch.hpp>

#include <Poco/JSON/Array.h>
#include <Poco/JSON/Object.h>
#include <Poco/JSON/Parser.h>

#include <algorithm>
#include <csignal>
#include <map>
#include <memory>
#include <regex>
#include <set>
#include <thread>

#include "../support/doc_blocks.hpp"
#include "../support/executive_metrics.hpp"
#include "../support/executive_process.hpp"
#include "../support/process.hpp"
#include "../support/prometheus_server.hpp"

using namespace daqx::test;
using Catch::Contains;

namespace {

// A partition file from config/, its ports moved to free ones (the same port keeps the same replacement, so the
// file stays consistent), one executive per context, started in file order.
class ShippedPartition {
 public:
  explicit ShippedPartition(const std::string& file) {
    std::string xml = read_text(config_directory() + "/" + file);
    REQUIRE(!xml.empty());
    std::map<std::string, std::string> ports;
    std::string moved;
    const std::regex port(R"((:|port=")(\d{4,5})\b)");
    std::sregex_iterator it(xml.begin(), xml.end(), port), end;
    std::size_t copied = 0;
    for (; it != end; ++it) {
      const std::smatch& match = *it;
      auto [found, added] = ports.try_emplace(match[2].str(), "");
      if (added) found->second = std::to_string(free_port());
      moved += xml.substr(copied, static_cast<std::size_t>(match.position(0)) - copied) + match[1].str() + found->second;
      copied = static_cast<std::size_t>(match.position(0) + match.length(0));
    }
    moved += xml.substr(copied);
    const std::string path = write_file(file, moved);
    const std::regex context(R"(<Context url="([^"]+)\")");
    for (std::sregex_iterator c(moved.begin(), moved.end(), context); c != end; ++c) urls.push_back((*c)[1].str());
    REQUIRE(!urls.empty());
    for (const std::string& url : urls) executives.push_back(std::make_unique<ExecutiveProcess>(path, url));
    for (auto& executive : executives) {
      INFO(executive->output());
      REQUIRE(executive->wait_ready());
    }
  }

  ~ShippedPartition() {
    for (auto& executive : executives) executive->stop(std::chrono::seconds(10));
  }

  // Ends every executive with SIGTERM: each must exit 0 (a sanitizer report or a hang would not).
  void finish() {
    for (std::size_t i = 0; i < executives.size(); ++i) {
      INFO(urls[i] << ":\n" << executives[i]->output());
      CHECK(executives[i]->stop(std::chrono::seconds(20)) == 0);
    }
  }

  // As the launcher does: configure every context in file order, then enable them.
  void start_run() {
    for (auto& executive : executives) REQUIRE(executive->transition("configure").status == 200);
    for (auto& executive : executives) REQUIRE(executive->transition("enable").status == 200);
  }

  // "127.0.0.1:port" of every executive, as a Prometheus target.
  std::vector<std::string> targets() const {
    std::vector<std::string> list;
    for (const std::string& url : urls) list.push_back(url.substr(url.find("://") + 3));
    return list;
  }

  std::vector<std::string> urls;
  std::vector<std::unique_ptr<ExecutiveProcess>> executives;
};

// Sum of a transport counter over the partition (from the JSON API), to see a run move.
double frames_sent(ShippedPartition& partition) {
  double total = 0;
  for (auto& executive : partition.executives) {
    const daqx::HttpReply reply = executive->get("/api/transports");
    if (reply.status != 200) continue;
    Poco::JSON::Array::Ptr transports = Poco::JSON::Parser().parse(reply.body).extract<Poco::JSON::Array::Ptr>();
    for (std::size_t t = 0; t < transports->size(); ++t) {
      Poco::JSON::Array::Ptr metrics = transports->getObject(static_cast<unsigned>(t))->getArray("metrics");
      for (std::size_t m = 0; metrics && m < metrics->size(); ++m) {
        Poco::JSON::Object::Ptr metric = metrics->getObject(static_cast<unsigned>(m));
        if (metric->getValue<std::string>("name") == "frames_sent") total += metric->getValue<double>("value");
      }
    }
  }
  return total;
}

// Every family name (from "# TYPE name type") of an exposition, with its type.
std::map<std::string, std::string> families(const std::string& exposition) {
  std::map<std::string, std::string> found;
  const std::regex type(R"(# TYPE (\S+) (\S+))");
  for (std::sregex_iterator it(exposition.begin(), exposition.end(), type), end; it != end; ++it)
    found[(*it)[1].str()] = (*it)[2].str();
  return found;
}

// The checks promtool does not make: our own naming rules (docs/metrics.md).
void check_names(const std::string& exposition) {
  for (const auto& [family, type] : families(exposition)) {
    INFO(family << " (" << type << ")");
    CHECK(family.starts_with("daqx_"));
    if (type != "counter") CHECK_FALSE(family.ends_with("_total"));
    for (const char* unit : {"_us", "_ms", "_microseconds", "_milliseconds", "_rate"})
      CHECK(family.find(std::string(unit) + "_") == std::string::npos);
    for (const char* unit : {"_us", "_ms", "_microseconds", "_milliseconds", "_rate"}) CHECK_FALSE(family.ends_with(unit));
  }
  CHECK_THAT(exposition, Contains("daqx_build_info{"));
  CHECK(exposition.find(",instance=\"") == std::string::npos);
  CHECK(exposition.find("{instance=\"") == std::string::npos);
}

// A partition shipped in config/ runs; then promtool checks every executive's /metrics.
void promtool_passes_on(const std::string& file) {
  require_tool("promtool");
  ShippedPartition partition(file);
  partition.start_run();
  // Let something move, so the counters, histograms and connections are there with values.
  const double before = frames_sent(partition);
  CHECK(wait_until([&] { return frames_sent(partition) > before; }, std::chrono::seconds(60)));
  for (std::size_t i = 0; i < partition.executives.size(); ++i) {
    const daqx::HttpReply metrics = partition.executives[i]->get("/metrics");
    INFO(file << ": " << partition.urls[i] << "/metrics:\n" << metrics.body);
    REQUIRE(metrics.status == 200);
    const std::string problems = promtool_problems(metrics.body);
    INFO(problems);
    CHECK(problems.empty());
    check_names(metrics.body);
  }
  partition.finish();
}

}  // namespace

TEST_CASE("promtool check metrics passes on every executive of the event builder over tcp", "[prometheus][process]") {
  promtool_passes_on("local-evb.xml");
}

TEST_CASE("promtool check metrics passes on every executive of N-to-N over tcp", "[prometheus][process]") {
  promtool_passes_on("local-nton-tcp.xml");
}

TEST_CASE("promtool check metrics passes on every executive of N-to-N over shared memory", "[prometheus][process]") {
  promtool_passes_on("local-nton-shm.xml");
}

TEST_CASE("promtool check metrics passes on the ping-pong executive", "[prometheus][process]") {
  require_tool("promtool");
  ShippedPartition partition("local-pingpong.xml");
  partition.start_run();
  ExecutiveProcess& executive = *partition.executives[0];
  REQUIRE(executive.wait_metric(1, "round_trips", 1000));
  const daqx::HttpReply metrics = executive.get("/metrics");
  INFO(metrics.body);
  REQUIRE(metrics.status == 200);
  const std::string problems = promtool_problems(metrics.body);
  INFO(problems);
  CHECK(problems.empty());
  check_names(metrics.body);
  // Round trips as a histogram in seconds; the median and p99 in microseconds stay in the JSON API.
  CHECK_THAT(metrics.body, Contains("# TYPE daqx_application_round_trip_seconds histogram"));
  CHECK(metrics.body.find("rtt_median_us") == std::string::npos);
  CHECK(executive.metric(1, "rtt_median_us") >= 0);
  partition.finish();
}

TEST_CASE("promtool finds what is wrong in an exposition (the check can fail)", "[prometheus]") {
  require_tool("promtool");
  CHECK(promtool_problems("# HELP daqx_x_total x\n# TYPE daqx_x_total counter\ndaqx_x_total 1\n").empty());
  // A counter without _total, and a gauge in microseconds: the two mistakes /metrics used to make.
  CHECK_FALSE(promtool_problems("# HELP daqx_x x\n# TYPE daqx_x counter\ndaqx_x 1\n").empty());
  CHECK_FALSE(promtool_problems("# HELP daqx_rtt_us x\n# TYPE daqx_rtt_us gauge\ndaqx_rtt_us 1\n").empty());
}

TEST_CASE("a real Prometheus scrapes a running event builder: built-event rate, transport counters, targets up",
          "[prometheus][process]") {
  require_tool("prometheus");
  ShippedPartition partition("local-evb.xml");
  partition.start_run();
  PrometheusServer prometheus(partition.targets());
  {
    const bool ready = prometheus.wait_ready();
    INFO("Prometheus's log:\n" << prometheus.output());
    REQUIRE(ready);
  }

  // Every target up, and the events built rate above zero: Prometheus computed it from the counters it
  // scraped (two samples at least, a second apart). Bounded: a stalled run fails here, a slow one does not.
  const std::string rate = "sum(rate(daqx_application_events_built_total[10s]))";
  const std::string bytes = "sum(rate(daqx_transport_bytes_sent_total{protocol=\"tcp\"}[10s]))";
  auto all_up = [&] {
    const std::vector<double> up = prometheus.values("up{job=\"daqx\"}");
    return up.size() == partition.targets().size() &&
           std::all_of(up.begin(), up.end(), [](double v) { return v == 1; });
  };
  auto positive = [&](const std::string& expr) {
    const std::vector<double> values = prometheus.values(expr);
    return values.size() == 1 && values[0] > 0;
  };
  const bool targets_up = wait_until(all_up, std::chrono::seconds(60));
  const bool building = wait_until([&] { return positive(rate); }, std::chrono::seconds(90));
  const bool sending = wait_until([&] { return positive(bytes); }, std::chrono::seconds(30));
  INFO("Prometheus's log:\n" << prometheus.output());
  INFO("targets answering: " << prometheus.values("up").size() << " of " << partition.targets().size());
  CHECK(targets_up);
  CHECK(building);
  CHECK(sending);

  // Our labels survived: no series had its instance label renamed to exported_instance.
  Poco::JSON::Object::Ptr renamed = prometheus.query("count({exported_instance!=\"\"})");
  REQUIRE(renamed);
  CHECK(renamed->getValue<std::string>("status") == "success");
  CHECK(prometheus.values("count({exported_instance!=\"\"})").empty());
  // Each application has its state as a state set: exactly one state at 1.
  const std::vector<double> enabled = prometheus.values("daqx_application_state{state=\"Enabled\"} == 1");
  CHECK(enabled.size() == 5);
  CHECK(prometheus.values("sum by (tid) (daqx_application_state) != 1").empty());
  // Connections labelled by their peer: every outgoing connection up, named by the context it goes to.
  const std::vector<double> connections = prometheus.values("daqx_transport_connection_up{peer_context=~\"http://.+\"} == 1");
  CHECK(!connections.empty());
  // Built-event latency quantiles from the histogram.
  CHECK(wait_until([&] {
    return positive("histogram_quantile(0.99, sum by (le) (rate(daqx_application_build_latency_seconds_bucket[10s])))");
  }, std::chrono::seconds(30)));
  partition.finish();
}

TEST_CASE("the Grafana dashboard in docs/ parses and uses only metrics a running event builder exports",
          "[prometheus][process][grafana]") {
  const std::string text = read_text(source_directory() + "/docs/grafana/daqx-dashboard.json");
  REQUIRE(!text.empty());
  Poco::JSON::Object::Ptr dashboard;
  REQUIRE_NOTHROW(dashboard = Poco::JSON::Parser().parse(text).extract<Poco::JSON::Object::Ptr>());
  REQUIRE(dashboard);
  CHECK(!dashboard->getValue<std::string>("title").empty());

  // A Prometheus data source variable, which every panel uses.
  bool datasource_variable = false;
  Poco::JSON::Object::Ptr templating = dashboard->getObject("templating");
  REQUIRE(templating);
  Poco::JSON::Array::Ptr variables = templating->getArray("list");
  for (std::size_t i = 0; variables && i < variables->size(); ++i) {
    Poco::JSON::Object::Ptr variable = variables->getObject(static_cast<unsigned>(i));
    if (variable->optValue<std::string>("type", "") == "datasource" &&
        variable->optValue<std::string>("query", "") == "prometheus")
      datasource_variable = true;
  }
  CHECK(datasource_variable);

  // Every expression of every panel, and the metric names in them.
  std::vector<std::string> expressions;
  std::set<std::string> names;
  Poco::JSON::Array::Ptr panels = dashboard->getArray("panels");
  REQUIRE(panels);
  const std::regex metric(R"(daqx_[a-z0-9_]+)");
  for (std::size_t p = 0; p < panels->size(); ++p) {
    Poco::JSON::Object::Ptr panel = panels->getObject(static_cast<unsigned>(p));
    Poco::JSON::Array::Ptr targets = panel->getArray("targets");
    if (panel->optValue<std::string>("type", "") == "row") continue;
    INFO("panel " << panel->optValue<std::string>("title", "?"));
    REQUIRE(targets);
    CHECK(targets->size() > 0);
    Poco::JSON::Object::Ptr datasource = panel->getObject("datasource");
    REQUIRE(datasource);
    CHECK(datasource->getValue<std::string>("uid") == "${datasource}");
    for (std::size_t t = 0; t < targets->size(); ++t) {
      const std::string expr = targets->getObject(static_cast<unsigned>(t))->getValue<std::string>("expr");
      expressions.push_back(expr);
      for (std::sregex_iterator it(expr.begin(), expr.end(), metric), end; it != end; ++it) names.insert(it->str());
    }
  }
  REQUIRE(!names.empty());

  // Exported by a running event builder over tcp (histograms through their _bucket, _sum and _count series),
  // with a subscriber on the first BU's stream (daqx-evb-dump --follow over its control port), whose subscription's
  // series the Streams panels read.
  ShippedPartition partition("local-evb.xml");
  partition.start_run();
  const double before = frames_sent(partition);
  REQUIRE(wait_until([&] { return frames_sent(partition) > before; }, std::chrono::seconds(60)));
  std::size_t publisher = partition.executives.size();
  for (std::size_t i = 0; i < partition.executives.size() && publisher == partition.executives.size(); ++i)
    if (partition.executives[i]->get("/api/applications/200/streams").status == 200) publisher = i;
  REQUIRE(publisher < partition.executives.size());
  const pid_t follower = start_process(
      {program_directory() + "/../apps/evb/daqx-evb-dump", "--follow",
       partition.urls[publisher] + "/api/applications/200/streams/events?policy=sample:100"},
      scratch_directory() + "/grafana-follower.log");
  const bool subscribed = wait_until(
      [&] { return partition.executives[publisher]->get("/metrics").body.find("daqx_application_subscriber_delivered_total{") != std::string::npos; },
      std::chrono::seconds(30));
  std::set<std::string> exported;
  for (auto& executive : partition.executives) {
    const std::string body = executive->get("/metrics").body;
    for (const auto& [family, type] : families(body)) {
      exported.insert(family);
      if (type == "histogram")
        for (const char* suffix : {"_bucket", "_sum", "_count"}) exported.insert(family + suffix);
    }
  }
  kill(follower, SIGTERM);
  reap_or_kill(follower, std::chrono::seconds(5));
  REQUIRE(subscribed);
  for (const std::string& name : names) {
    INFO("the dashboard uses " << name);
    CHECK(exported.count(name) == 1);
  }

  // And Prometheus accepts every expression (with Grafana's variables filled in) against that partition.
  require_tool("prometheus");  // skips the rest (after the checks above) where it is missing
  PrometheusServer prometheus(partition.targets());
  {
    const bool ready = prometheus.wait_ready();
    INFO("Prometheus's log:\n" << prometheus.output());
    REQUIRE(ready);
  }
  for (std::string expr : expressions) {
    for (const auto& [variable, value] : std::vector<std::pair<std::string, std::string>>{
             {"$__rate_interval", "10s"}, {"$__interval", "1s"}, {"$instance", ".*"}, {"$job", ".*"}}) {
      for (std::size_t at = expr.find(variable); at != std::string::npos; at = expr.find(variable, at))
        expr.replace(at, variable.size(), value);
    }
    INFO(expr);
    Poco::JSON::Object::Ptr answer = prometheus.query(expr);
    REQUIRE(answer);
    CHECK(answer->getValue<std::string>("status") == "success");
  }
  partition.finish();
}
