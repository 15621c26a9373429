// Rates of units from successive samples: each from two samples of the same unit over the time between them,
// none before a unit's second sample or while it is not Enabled, and amounts kept across a restarted context.
#include <catch2/catch.hpp>

#include "unit_rates.hpp"

namespace daqx::console {
namespace {

using namespace std::chrono_literals;

UnitSample unit(const std::string& name, const std::string& state, double events, double bytes, std::uint64_t run = 7) {
  UnitSample sample;
  sample.name = name;
  sample.state = state;
  sample.run = run;
  sample.counters = {{"events_built", events}, {"bytes_built", bytes}, {"events_corrupt", 0}};
  return sample;
}

ContextSample context(const std::string& url, Clock::time_point at, std::vector<UnitSample> units) {
  ContextSample sample;
  sample.url = url;
  sample.answered = true;
  sample.at = at;
  sample.units = std::move(units);
  return sample;
}

ContextSample silent(const std::string& url) {
  ContextSample sample;
  sample.url = url;
  sample.error = "Connection refused";
  return sample;
}

const UnitRates& row(const std::vector<UnitRates>& rows, const std::string& name) {
  for (const UnitRates& r : rows)
    if (r.name == name) return r;
  FAIL("no row " << name);
  return rows.front();
}

}  // namespace

TEST_CASE("a unit has no rate on its first sample, then the change of its own counters over its own interval",
          "[console]") {
  RateTracker tracker;
  const Clock::time_point t0 = Clock::now();
  // The EvM's context answers a second after the BUs': its first rate is still over its own two samples.
  auto first = tracker.update({context("http://a", t0, {unit("evb/bu/0", "Enabled", 1000, 4e6)}),
                               context("http://b", t0 + 1s, {unit("evb/bu/1", "Enabled", 0, 0)})});
  CHECK_FALSE(row(first, "evb/bu/0").items_per_second);
  CHECK_FALSE(row(first, "evb/bu/1").items_per_second);
  CHECK(row(first, "evb/bu/0").items == 1000);
  auto second = tracker.update({context("http://a", t0 + 2s, {unit("evb/bu/0", "Enabled", 3000, 12e6)}),
                                context("http://b", t0 + 1500ms, {unit("evb/bu/1", "Enabled", 500, 2e6)})});
  CHECK(*row(second, "evb/bu/0").items_per_second == Approx(1000));  // 2000 events over 2 s
  CHECK(*row(second, "evb/bu/0").bytes_per_second == Approx(4e6));
  CHECK(*row(second, "evb/bu/1").items_per_second == Approx(1000));  // 500 events over 0.5 s
  CHECK(row(second, "evb/bu/0").item_word == "events");

  const std::vector<KindRates> kinds = kind_rates(second);
  REQUIRE(kinds.size() == 1);
  CHECK(kinds[0].kind == "evb/bu");
  CHECK(kinds[0].units == 2);
  CHECK(kinds[0].units_with_rate == 2);
  CHECK(*kinds[0].items_per_second == Approx(2000));
  CHECK(kinds[0].items == 3500);
}

TEST_CASE("a stopped unit shows its state and no rate, an unreachable context its units as unreachable", "[console]") {
  RateTracker tracker;
  const Clock::time_point t0 = Clock::now();
  tracker.update({context("http://a", t0, {unit("evb/bu/0", "Enabled", 0, 0)}), silent("http://never")});
  auto stopped = tracker.update({context("http://a", t0 + 1s, {unit("evb/bu/0", "Configured", 100, 1e5)})});
  CHECK(row(stopped, "evb/bu/0").state == "Configured");
  CHECK_FALSE(row(stopped, "evb/bu/0").items_per_second);
  CHECK(row(stopped, "evb/bu/0").items == 100);  // what it did stays

  auto gone = tracker.update({silent("http://a"), silent("http://never")});
  CHECK(row(gone, "evb/bu/0").state == "unreachable");
  CHECK(row(gone, "evb/bu/0").reason == "Connection refused");
  CHECK_FALSE(row(gone, "evb/bu/0").items_per_second);
  CHECK(row(gone, "http://never").state == "unreachable");  // never seen: one row named by its URL

  // Back, and Enabled again: a rate only from its second sample after the gap.
  auto back = tracker.update({context("http://a", t0 + 3s, {unit("evb/bu/0", "Enabled", 100, 1e5)})});
  CHECK_FALSE(row(back, "evb/bu/0").items_per_second);
  auto again = tracker.update({context("http://a", t0 + 4s, {unit("evb/bu/0", "Enabled", 300, 3e5)})});
  CHECK(*row(again, "evb/bu/0").items_per_second == Approx(200));
}

TEST_CASE("a restarted context's earlier counts stay in the run's totals, a new run starts from zero", "[console]") {
  RateTracker tracker;
  const Clock::time_point t0 = Clock::now();
  tracker.update({context("http://a", t0, {unit("evb/bu/0", "Enabled", 5000, 5e6)})});
  auto restarted = tracker.update({context("http://a", t0 + 1s, {unit("evb/bu/0", "Enabled", 40, 4e4)})});
  CHECK_FALSE(row(restarted, "evb/bu/0").items_per_second);  // not a negative rate
  CHECK(row(restarted, "evb/bu/0").items == 5040);
  const std::vector<UnitTotals> totals = tracker.totals();
  REQUIRE(totals.size() == 1);
  CHECK(totals[0].counters.at("events_built") == 5040);
  CHECK(totals[0].throughput.items_counter == "events_built");
  CHECK(totals[0].throughput.bytes_counter == "bytes_built");

  auto next_run = tracker.update({context("http://a", t0 + 2s, {unit("evb/bu/0", "Enabled", 10, 1e4, 8)})});
  CHECK(row(next_run, "evb/bu/0").items == 10);
}

TEST_CASE("the counters that say how much a unit moves are chosen by name, the most telling first", "[console]") {
  CHECK(throughput_of({{"fragments_received", 1}, {"events_built", 1}, {"bytes_built", 1}}).items_counter == "events_built");
  CHECK(throughput_of({{"events_completed", 1}, {"trigger_bytes", 1}}).item_word == "events");
  CHECK(throughput_of({{"events_completed", 1}, {"trigger_bytes", 1}}).bytes_counter.empty());
  CHECK(throughput_of({{"frames_sent", 1}, {"bytes_sent", 1}}).bytes_counter == "bytes_sent");
  CHECK(throughput_of({{"requests", 1}}).items_counter.empty());
  CHECK(kind_of("evb/bu/1") == "evb/bu");
}

}  // namespace daqx::console
