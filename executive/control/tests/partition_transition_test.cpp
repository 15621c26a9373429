// Transitions over a ControlRequestPool against real control servers on loopback: phases from the partition file,
// the contexts of a phase at once and the phases in order (reverse to bring down), a context that accepts and
// never answers named after its own deadline, a refusal named with its reason, and the report of every context.
#include <catch2/catch.hpp>

#include <Poco/Net/ServerSocket.h>
#include <Poco/Net/SocketAddress.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>

#include "../../../tests/support/partition_builder.hpp"
#include "../../../tests/support/process.hpp"
#include "daqx/executive/control.hpp"
#include "daqx/control/control_request_pool.hpp"
#include "daqx/control/control_server.hpp"
#include "daqx/executive/partition.hpp"
#include "daqx/control/partition_transition.hpp"

namespace {

using Clock = std::chrono::steady_clock;

// Every context's model writes what it was asked here, in the order the requests arrived; a command's requests can
// also be made to wait until all of a group have arrived, which holds only when that group is asked at once.
class Journal {
 public:
  void arrived(const std::string& url, const std::string& command) {
    std::lock_guard lock(mutex_);
    entries_.push_back(url + " " + command);
    ++in_flight_;
    most_in_flight_ = std::max(most_in_flight_, in_flight_);
    most_in_flight_now_ = std::max(most_in_flight_now_, in_flight_);
    arrivals_.notify_all();
  }
  void left() {
    std::lock_guard lock(mutex_);
    if (--in_flight_ == 0) most_in_flight_now_ = 0;  // a group of requests is over
  }
  // Waits (at most 10 s: a bound against a hang) until `count` requests have been in flight at once since none
  // was; false if they never were.
  bool together(std::size_t count) {
    std::unique_lock lock(mutex_);
    return arrivals_.wait_for(lock, std::chrono::seconds(10), [&] { return most_in_flight_now_ >= count; });
  }
  std::vector<std::string> entries() const {
    std::lock_guard lock(mutex_);
    return entries_;
  }
  std::size_t most_in_flight() const {
    std::lock_guard lock(mutex_);
    return most_in_flight_;
  }

 private:
  mutable std::mutex mutex_;
  std::condition_variable arrivals_;
  std::vector<std::string> entries_;
  std::size_t in_flight_ = 0;
  std::size_t most_in_flight_ = 0;
  std::size_t most_in_flight_now_ = 0;  // since in_flight_ was last 0
};

// A context as the control server sees it: one application, transitions written to the journal.
class JournalModel final : public daqx::ControlModel {
 public:
  JournalModel(Journal& journal, std::string url) : journal_(journal), url_(std::move(url)) {}
  std::string context_url() const override { return url_; }
  std::string partition_name() const override { return "fanout-test"; }
  std::vector<daqx::ApplicationStatus> applications() const override { return {}; }
  std::optional<daqx::ApplicationStatus> application(daqx::Tid) const override { return std::nullopt; }
  daqx::TransitionResult transition(std::optional<daqx::Tid>, daqx::Command command) override {
    const std::string name(daqx::to_string(command));
    journal_.arrived(url_, name);
    daqx::TransitionResult result;
    result.ok = true;
    result.message = name + ": done";
    result.states = {{1, daqx::State::configured}};
    if (refuse.load()) {
      result.ok = false;
      result.http_status = 409;
      result.message = "told to refuse " + name;
    } else if (wait_for_together != 0 && !journal_.together(wait_for_together)) {
      result.ok = false;
      result.http_status = 500;
      result.message = "the others of its phase were not asked at the same time";
    } else if (hold.count() != 0) {
      std::this_thread::sleep_for(hold);
    }
    journal_.left();
    return result;
  }
  std::string set_parameter(daqx::Tid, const std::string&, const std::string&) override { return "no"; }
  std::vector<daqx::PoolStatus> pools() const override { return {}; }
  std::vector<daqx::ThreadStatus> threads() const override { return {}; }
  std::vector<daqx::TransportStatus> transports() const override { return {}; }
  std::vector<daqx::Metric> executive_metrics() const override { return {}; }

  std::atomic<bool> refuse{false};
  std::size_t wait_for_together = 0;  // 0: no waiting
  std::chrono::milliseconds hold{0};

 private:
  Journal& journal_;
  std::string url_;
};

// Real control servers on loopback ports, one per context, whose URLs are known before the partition is written.
struct Contexts {
  Journal journal;
  std::vector<std::unique_ptr<JournalModel>> models;
  std::vector<std::unique_ptr<daqx::ControlServer>> servers;
  std::vector<std::string> urls;

  explicit Contexts(std::size_t count) {
    for (std::size_t i = 0; i < count; ++i) {
      // The port first (a server on port 0), then the model that names it, served on that port.
      JournalModel placeholder(journal, "http://127.0.0.1:0");
      auto first = std::make_unique<daqx::ControlServer>(placeholder, "127.0.0.1", 0);
      const std::uint16_t port = first->port();
      first.reset();
      urls.push_back("http://127.0.0.1:" + std::to_string(port));
      models.push_back(std::make_unique<JournalModel>(journal, urls.back()));
      servers.push_back(std::make_unique<daqx::ControlServer>(*models.back(), "127.0.0.1", port, 4));
      servers.back()->start();
    }
  }
};

// A partition whose i-th context hosts the classes classes[i] (comma-separated), at urls[i].
daqx::config::Partition partition_of(const std::vector<std::string>& urls, const std::vector<std::string>& classes) {
  daqx::test::PartitionBuilder built("fanout-test");
  std::uint32_t tid = 1;
  for (std::size_t i = 0; i < urls.size(); ++i) {
    daqx::test::ContextBuilder context = built.context(urls[i]);
    std::size_t from = 0;
    while (from <= classes[i].size()) {
      const std::size_t comma = std::min(classes[i].find(',', from), classes[i].size());
      context.application(classes[i].substr(from, comma - from), tid, tid);  // instance: unique per class
      ++tid;
      from = comma + 1;
    }
  }
  return daqx::config::parse_partition(built.xml(), "fanout-test.xml");
}

std::vector<std::string> example_urls(std::size_t count) {
  std::vector<std::string> urls;
  for (std::size_t i = 0; i < count; ++i) urls.push_back("http://127.0.0.1:" + std::to_string(20000 + i));
  return urls;
}

// The position in `entries` of the first and last request to any of `urls`.
std::pair<std::size_t, std::size_t> span_of(const std::vector<std::string>& entries, const std::vector<std::string>& urls) {
  std::size_t first = entries.size(), last = 0;
  for (std::size_t i = 0; i < entries.size(); ++i)
    for (const std::string& url : urls)
      if (entries[i].starts_with(url + " ")) {
        first = std::min(first, i);
        last = std::max(last, i);
      }
  return {first, last};
}

}  // namespace

TEST_CASE("transition phases are the runs of consecutive contexts that host the same set of application classes",
          "[executive][transition]") {
  SECTION("an event builder: BU contexts, RU contexts, then the EvM make three phases in file order") {
    const std::vector<std::string> urls = example_urls(5);
    const auto phases = daqx::transition_phases(
        partition_of(urls, {"evb::BU,evb::Consumer", "evb::Consumer,evb::BU", "evb::RU", "evb::RU", "evb::EvM"}));
    CHECK(phases == daqx::ContextPhases{{urls[0], urls[1]}, {urls[2], urls[3]}, {urls[4]}});
  }
  SECTION("the same set again after another is a phase of its own: the file's order is kept") {
    const std::vector<std::string> urls = example_urls(4);
    const auto phases = daqx::transition_phases(partition_of(urls, {"a::A", "b::B", "a::A", "a::A"}));
    CHECK(phases == daqx::ContextPhases{{urls[0]}, {urls[1]}, {urls[2], urls[3]}});
  }
  SECTION("contexts left out by the filter leave their phase's bounds where they were") {
    const std::vector<std::string> urls = example_urls(5);
    const daqx::config::Partition partition =
        partition_of(urls, {"evb::BU", "evb::BU", "evb::RU", "evb::EvM", "evb::EvM"});
    // Without the RU and one EvM: the BUs and the other EvM stay apart, and no phase is left empty.
    const auto phases = daqx::transition_phases(
        partition, [&](const std::string& url) { return url != urls[2] && url != urls[3]; });
    CHECK(phases == daqx::ContextPhases{{urls[0], urls[1]}, {urls[4]}});
  }
}

TEST_CASE("a request pool keeps as many requests in flight as its fan-out over its few threads: 40 contexts that "
          "answer only once all 40 are asked are served by 4 threads", "[executive][transition]") {
  Contexts contexts(40);
  for (auto& model : contexts.models) model->wait_for_together = 40;
  const std::size_t before = daqx::test::threads_of_this_process();
  daqx::ControlRequestPool pool(40, 4);
  CHECK(pool.threads() == 4);
  CHECK(pool.fanout() == 40);
  CHECK(daqx::test::threads_of_this_process() == before + 4);
  daqx::TransitionRequest request;
  request.command = "configure";
  request.deadline = std::chrono::seconds(30);
  const daqx::TransitionOutcome outcome = daqx::run_transition({contexts.urls}, request, pool);
  for (const std::string& line : outcome.failure_lines()) UNSCOPED_INFO(line);
  CHECK(outcome.ok());
  CHECK(contexts.journal.entries().size() == 40);
  CHECK(contexts.journal.most_in_flight() == 40);
  CHECK(daqx::test::threads_of_this_process() == before + 4);  // no thread per request
}

TEST_CASE("configure asks the contexts of a phase at once and the phases in file order, stop takes them in reverse",
          "[executive][transition]") {
  Contexts contexts(7);
  const auto& urls = contexts.urls;
  const daqx::config::Partition partition =
      partition_of(urls, {"evb::BU", "evb::BU", "evb::BU", "evb::RU", "evb::RU", "evb::RU", "evb::EvM"});
  const daqx::ContextPhases phases = daqx::transition_phases(partition);
  REQUIRE(phases.size() == 3);
  // Each BU and RU answers only once the other two of its phase are in flight with it: asked one after another,
  // they would be refused.
  for (std::size_t i = 0; i < 6; ++i) contexts.models[i]->wait_for_together = 3;

  daqx::ControlRequestPool pool;
  daqx::TransitionRequest request;
  request.command = "configure";
  request.deadline = std::chrono::seconds(30);
  const daqx::TransitionOutcome configured = daqx::run_transition(phases, request, pool);
  INFO(configured.total_line());
  for (const std::string& line : configured.failure_lines()) UNSCOPED_INFO(line);
  CHECK(configured.ok());
  CHECK(configured.total_line().starts_with("configure: 7/7 contexts in "));
  CHECK(configured.total_line().ends_with(" s (3 phases)"));
  CHECK(configured.failure_lines().empty());
  for (const daqx::ContextOutcome& context : configured.contexts) CHECK(context.states == "1:Configured");
  std::vector<std::string> entries = contexts.journal.entries();
  REQUIRE(entries.size() == 7);
  const auto bus = span_of(entries, phases[0]), rus = span_of(entries, phases[1]), evm = span_of(entries, phases[2]);
  CHECK(bus.second < rus.first);
  CHECK(rus.second < evm.first);

  for (auto& model : contexts.models) model->wait_for_together = 0;
  request.command = "stop";
  const daqx::TransitionOutcome stopped = daqx::run_transition(phases, request, pool);
  CHECK(stopped.ok());
  entries = contexts.journal.entries();
  REQUIRE(entries.size() == 14);
  const std::vector<std::string> stop_entries(entries.begin() + 7, entries.end());
  CHECK(stop_entries.front() == urls[6] + " stop");  // the EvM first
  const auto stop_bus = span_of(stop_entries, phases[0]), stop_rus = span_of(stop_entries, phases[1]);
  CHECK(stop_rus.second < stop_bus.first);
}

TEST_CASE("no more contexts are asked at once than the fan-out allows", "[executive][transition]") {
  Contexts contexts(9);
  for (auto& model : contexts.models) model->hold = std::chrono::milliseconds(50);
  daqx::TransitionRequest request;
  request.command = "configure";
  daqx::ControlRequestPool pool(2);
  const daqx::TransitionOutcome outcome = daqx::run_transition({contexts.urls}, request, pool);
  CHECK(outcome.ok());
  CHECK(contexts.journal.entries().size() == 9);
  CHECK(contexts.journal.most_in_flight() <= 2);
}

TEST_CASE("a context that accepts and never answers is named after its own deadline while the rest of its phase "
          "completes: configure goes no further, stop goes on",
          "[executive][transition]") {
  Contexts contexts(4);
  // Accepts connections (the kernel's backlog) and never reads or answers them: a stopped or hung executive.
  Poco::Net::ServerSocket hung(Poco::Net::SocketAddress("127.0.0.1", 0));
  const std::string hung_url = "http://127.0.0.1:" + std::to_string(hung.address().port());
  const auto& urls = contexts.urls;
  // Phases: {0, 1, hung}, {2, 3}.
  const daqx::ContextPhases phases{{urls[0], urls[1], hung_url}, {urls[2], urls[3]}};

  daqx::ControlRequestPool pool;
  daqx::TransitionRequest request;
  request.command = "configure";
  request.deadline = std::chrono::milliseconds(1500);
  const daqx::TransitionOutcome configured = daqx::run_transition(phases, request, pool);
  CHECK_FALSE(configured.ok());
  REQUIRE(configured.contexts.size() == 5);
  CHECK(configured.count(daqx::ContextOutcome::Result::done) == 2);
  CHECK(configured.count(daqx::ContextOutcome::Result::no_answer) == 1);
  CHECK(configured.count(daqx::ContextOutcome::Result::not_asked) == 2);
  const std::vector<std::string> lines = configured.failure_lines();
  REQUIRE(lines.size() == 2);
  CHECK(lines[0] == hung_url + " configure: no answer within 1.5 s");
  CHECK(lines[1] == "configure: not asked, as an earlier phase did not complete: 2 contexts (first " + urls[2] + ")");
  CHECK_THAT(configured.total_line(),
             Catch::StartsWith("configure: 2/5 contexts in ") &&
                 Catch::EndsWith(" s (2 phases, 1 without an answer, 2 not asked)"));
  CHECK(contexts.journal.entries().size() == 2);  // the second phase was not asked

  request.command = "stop";
  const daqx::TransitionOutcome stopped = daqx::run_transition(phases, request, pool);
  CHECK(stopped.count(daqx::ContextOutcome::Result::done) == 4);
  CHECK(stopped.count(daqx::ContextOutcome::Result::no_answer) == 1);
  CHECK_THAT(stopped.total_line(), Catch::EndsWith(" s (2 phases, 1 without an answer)"));
}

TEST_CASE("a refusal is named with the context's reason, and a context nobody listens on with the connection's",
          "[executive][transition]") {
  Contexts contexts(2);
  contexts.models[1]->refuse = true;
  std::string dead_url;
  {
    Poco::Net::ServerSocket closed(Poco::Net::SocketAddress("127.0.0.1", 0));
    dead_url = "http://127.0.0.1:" + std::to_string(closed.address().port());
  }  // closed: nobody listens there now
  daqx::TransitionRequest request;
  request.command = "halt";
  daqx::ControlRequestPool pool;
  const daqx::TransitionOutcome outcome =
      daqx::run_transition({{contexts.urls[0], contexts.urls[1], dead_url}}, request, pool);
  CHECK(outcome.count(daqx::ContextOutcome::Result::done) == 1);
  const std::vector<std::string> lines = outcome.failure_lines();
  REQUIRE(lines.size() == 2);
  CHECK(lines[0] == contexts.urls[1] + " halt: refused (409): told to refuse halt [states: 1:Configured]");
  CHECK_THAT(lines[1], Catch::StartsWith(dead_url + " halt: no answer: ") && Catch::Contains("refused"));
  CHECK_THAT(outcome.total_line(), Catch::EndsWith(" s (1 phase, 1 without an answer, 1 refused)"));
}
