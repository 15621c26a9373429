// Rates of the units of a partition from successive samples: each rate is the change of one unit's counter
// between two of its own samples divided by the time between them, so no figure mixes windows or units.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "partition_poll.hpp"

namespace daqx::console {

// The counters that say how much a unit moves: the first of a list of known names that the unit reports
// (events_built, events_completed, fragments_sent, frames_received, ...; bytes_built, bytes_sent, ...).
struct Throughput {
  std::string items_counter;  // empty: the unit reports no amount of items
  std::string item_word;      // "events", "fragments", "frames", ...
  std::string bytes_counter;  // empty: no amount of bytes
};
Throughput throughput_of(const std::map<std::string, double>& counters);

// One unit (application) now.
struct UnitRates {
  std::string context;
  std::string name;   // "evb/bu/1"
  std::string kind;   // "evb/bu": units of one kind are summed
  std::string state;  // its state, or its context's down_state ("unreachable") when that did not answer
  std::string reason;  // a Failed unit's reason, an unreachable context's error
  std::string item_word;
  bool reports_bytes = false;
  // Per second since this unit's previous sample; none on its first sample, when it is not Enabled now or was
  // not then, or when its counters went back (its context restarted) or its run changed.
  std::optional<double> items_per_second;
  std::optional<double> bytes_per_second;
  double items = 0;  // so far in this run, a restarted context's earlier counts included
  double bytes = 0;
};

// Per kind: the sum of the rates of its units that have one.
struct KindRates {
  std::string kind;
  std::string item_word;
  bool reports_bytes = false;
  std::size_t units = 0;
  std::size_t units_with_rate = 0;
  std::optional<double> items_per_second;
  std::optional<double> bytes_per_second;
  double items = 0;
  double bytes = 0;
};

// One unit's counters over the run: what it reported last, plus what an earlier process of its context had
// counted before it restarted.
struct UnitTotals {
  std::string context;
  std::string name;
  std::string kind;
  std::string state;
  Throughput throughput;
  std::map<std::string, double> counters;
};

class RateTracker {
 public:
  // The units of `samples` with their rates since the previous update. Units of a context that does not answer
  // are listed with its down_state (a context never seen answering: one row named by its URL).
  std::vector<UnitRates> update(const std::vector<ContextSample>& samples);

  // Every unit seen, in the order first seen.
  std::vector<UnitTotals> totals() const;

 private:
  struct Unit {
    std::string context;
    std::string name;
    std::string state;
    std::uint64_t run = 0;
    bool enabled = false;
    Clock::time_point at;
    std::map<std::string, double> counters;  // as last reported
    std::map<std::string, double> carried;   // from before its context restarted, in this run
  };
  UnitRates row_of(const Unit& unit, const std::string& state, const std::string& reason) const;
  std::vector<Unit> units_;  // in the order first seen
  // Where each unit is in units_, by context and name, and which units each context holds: a round is O(units).
  std::unordered_map<std::string, std::size_t> index_;
  std::unordered_map<std::string, std::vector<std::size_t>> by_context_;
};

std::string kind_of(const std::string& unit_name);  // "evb/bu/1" -> "evb/bu"

std::vector<KindRates> kind_rates(const std::vector<UnitRates>& units);

}  // namespace daqx::console
