// The counter set: one declaration per counter gives reset, snapshot, totals and report.
#include <catch2/catch.hpp>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "daqx/api/counter_set.hpp"

namespace {

struct LinkCounters : daqx::CounterSet {
  daqx::Counter frames{*this, "frames", "frames sent"};
  daqx::Counter bytes{*this, "bytes", "bytes sent"};
  daqx::Counter peers{*this, "peers", "peers connected now", daqx::Metric::Kind::gauge};
  daqx::Counter deepest{*this, "deepest_queue", "the deepest the queue was", daqx::Metric::Kind::gauge};
};

const daqx::Metric& find(const daqx::MetricSink& sink, const std::string& name) {
  for (const daqx::Metric& metric : sink.metrics())
    if (metric.name == name) return metric;
  FAIL("no metric " << name);
  throw std::logic_error("unreachable");
}

}  // namespace

TEST_CASE("A counter set reports each member once, with its name, kind and help, in declaration order", "[counter_set]") {
  LinkCounters counters;
  counters.frames.add(3);
  counters.bytes.add_single_writer(300);
  counters.peers.set(2);
  daqx::MetricSink sink;
  counters.report(sink, {{"peer", "ru-1"}});
  REQUIRE(sink.metrics().size() == 4);
  CHECK(sink.metrics()[0].name == "frames");
  CHECK(sink.metrics()[3].name == "deepest_queue");
  CHECK(find(sink, "frames").value == 3);
  CHECK(find(sink, "frames").kind == daqx::Metric::Kind::counter);
  CHECK(find(sink, "frames").help == "frames sent");
  CHECK(find(sink, "bytes").value == 300);
  CHECK(find(sink, "peers").kind == daqx::Metric::Kind::gauge);
  CHECK(find(sink, "peers").value == 2);
  REQUIRE(find(sink, "peers").labels.size() == 1);
  CHECK(find(sink, "peers").labels[0].second == "ru-1");
}

TEST_CASE("Resetting a counter set zeroes every member", "[counter_set]") {
  LinkCounters counters;
  counters.frames.add();
  counters.bytes.add(10);
  counters.peers.set(5);
  counters.deepest.raise_to(7);
  counters.reset();
  for (std::uint64_t value : counters.snapshot().values) CHECK(value == 0);
}

TEST_CASE("A member's index finds its value in a snapshot", "[counter_set]") {
  LinkCounters counters;
  LinkCounters other;
  counters.peers.set(9);
  CHECK(counters.snapshot().values[counters.index(counters.peers)] == 9);
  CHECK(counters.index(other.peers) == counters.size());
}

TEST_CASE("Snapshots add up to totals reported with the set's names, zeros before anything is added", "[counter_set]") {
  LinkCounters first;
  LinkCounters second;
  first.frames.add(2);
  second.frames.add(5);
  second.bytes.add(40);
  daqx::CounterValues totals;
  daqx::MetricSink empty;
  first.report_values(empty, totals);
  REQUIRE(empty.metrics().size() == 4);
  CHECK(find(empty, "frames").value == 0);
  totals += first.snapshot();
  totals += second.snapshot();
  daqx::MetricSink sink;
  first.report_values(sink, totals);
  CHECK(find(sink, "frames").value == 7);
  CHECK(find(sink, "bytes").value == 40);
}

TEST_CASE("A high-water mark only rises, also when threads raise it at once", "[counter_set]") {
  LinkCounters counters;
  counters.deepest.raise_to(10);
  counters.deepest.raise_to(4);
  CHECK(counters.deepest.load() == 10);
  std::vector<std::thread> threads;
  for (std::uint64_t t = 0; t < 4; ++t)
    threads.emplace_back([&counters, t] {
      for (std::uint64_t v = 0; v < 10000; ++v) counters.deepest.raise_to(v * 4 + t);
    });
  for (std::thread& thread : threads) thread.join();
  CHECK(counters.deepest.load() == 9999 * 4 + 3);
}

TEST_CASE("Counts added from several threads at once are all kept", "[counter_set]") {
  LinkCounters counters;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&counters] {
      for (int i = 0; i < 10000; ++i) counters.frames.add();
    });
  for (std::thread& thread : threads) thread.join();
  CHECK(counters.frames.load() == 40000);
}

TEST_CASE("A counter set refuses a member of a kind it cannot report", "[counter_set]") {
  struct Wrong : daqx::CounterSet {
    daqx::Counter histogram{*this, "latency", "a histogram", daqx::Metric::Kind::histogram};
  };
  CHECK_THROWS_WITH(Wrong{}, Catch::Contains("counters and gauges only"));
}
