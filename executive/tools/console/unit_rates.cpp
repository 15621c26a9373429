#include "unit_rates.hpp"

#include <array>
#include <utility>

#include "daqx/control/headline_counters.hpp"

namespace daqx::console {
namespace {


double value_of(const std::map<std::string, double>& counters, const std::string& name) {
  const auto found = counters.find(name);
  return found == counters.end() ? 0.0 : found->second;
}

// A counter lower than before in the same run: the context's process was restarted and counts from zero.
bool went_back(const std::map<std::string, double>& before, const std::map<std::string, double>& now) {
  for (const auto& [name, value] : before) {
    const auto found = now.find(name);
    if (found != now.end() && found->second < value) return true;
  }
  return false;
}

}  // namespace

Throughput throughput_of(const std::map<std::string, double>& counters) {
  Throughput throughput;
  for (const auto& [name, word] : kHeadlineItemCounters) {
    if (counters.count(name) != 0) {
      throughput.items_counter = name;
      throughput.item_word = word;
      break;
    }
  }
  for (const char* name : kHeadlineByteCounters) {
    if (counters.count(name) != 0) {
      throughput.bytes_counter = name;
      break;
    }
  }
  return throughput;
}

std::string kind_of(const std::string& unit_name) {
  const std::size_t slash = unit_name.rfind('/');
  return slash == std::string::npos ? unit_name : unit_name.substr(0, slash);
}

// A unit's row as it stands: its state now and its amounts this run, without rates.
UnitRates RateTracker::row_of(const Unit& unit, const std::string& state, const std::string& reason) const {
  const Throughput throughput = throughput_of(unit.counters);
  UnitRates row;
  row.context = unit.context;
  row.name = unit.name;
  row.kind = kind_of(unit.name);
  row.state = state;
  row.reason = reason;
  row.item_word = throughput.item_word;
  row.reports_bytes = !throughput.bytes_counter.empty();
  row.items = value_of(unit.carried, throughput.items_counter) + value_of(unit.counters, throughput.items_counter);
  row.bytes = value_of(unit.carried, throughput.bytes_counter) + value_of(unit.counters, throughput.bytes_counter);
  return row;
}

std::vector<UnitRates> RateTracker::update(const std::vector<ContextSample>& samples) {
  std::vector<UnitRates> rows;
  for (const ContextSample& context : samples) {
    if (!context.answered) {
      const auto held = by_context_.find(context.url);
      if (held != by_context_.end()) {
        for (std::size_t i : held->second) {
          Unit& unit = units_[i];
          unit.enabled = false;  // no rate across a gap: the next answer starts a new window
          unit.state = context.down_state;
          rows.push_back(row_of(unit, context.down_state, context.error));
        }
      } else {
        UnitRates row;
        row.context = context.url;
        row.name = context.url;
        row.kind = context.url;
        row.state = context.down_state;
        row.reason = context.error;
        rows.push_back(std::move(row));
      }
      continue;
    }
    for (const UnitSample& sample : context.units) {
      // A URL holds no newline: context and name joined by one are a unique key.
      const auto [found, first] = index_.try_emplace(context.url + '\n' + sample.name, units_.size());
      if (first) {
        units_.push_back(Unit{context.url, sample.name, {}, sample.run, false, context.at, {}, {}});
        by_context_[context.url].push_back(found->second);
      }
      Unit* unit = &units_[found->second];
      const bool enabled = sample.state == "Enabled";
      const bool same_run = sample.run == unit->run;
      const bool restarted = !first && same_run && went_back(unit->counters, sample.counters);
      const Throughput throughput = throughput_of(sample.counters);
      const double seconds = std::chrono::duration<double>(context.at - unit->at).count();
      std::optional<double> items_per_second, bytes_per_second;
      if (!first && same_run && !restarted && enabled && unit->enabled && seconds > 0) {
        if (!throughput.items_counter.empty())
          items_per_second = (value_of(sample.counters, throughput.items_counter) -
                              value_of(unit->counters, throughput.items_counter)) / seconds;
        if (!throughput.bytes_counter.empty())
          bytes_per_second = (value_of(sample.counters, throughput.bytes_counter) -
                              value_of(unit->counters, throughput.bytes_counter)) / seconds;
      }
      if (!same_run) {
        unit->carried.clear();  // a new run counts from zero
      } else if (restarted) {
        for (const auto& [name, value] : unit->counters) unit->carried[name] += value;
      }
      unit->run = sample.run;
      unit->state = sample.state;
      unit->enabled = enabled;
      unit->at = context.at;
      unit->counters = sample.counters;
      UnitRates row = row_of(*unit, sample.state, sample.reason);
      row.items_per_second = items_per_second;
      row.bytes_per_second = bytes_per_second;
      rows.push_back(std::move(row));
    }
  }
  return rows;
}

std::vector<UnitTotals> RateTracker::totals() const {
  std::vector<UnitTotals> totals;
  for (const Unit& unit : units_) {
    UnitTotals total;
    total.context = unit.context;
    total.name = unit.name;
    total.kind = kind_of(unit.name);
    total.state = unit.state;
    total.counters = unit.counters;
    for (const auto& [name, value] : unit.carried) total.counters[name] += value;
    total.throughput = throughput_of(total.counters);
    totals.push_back(std::move(total));
  }
  return totals;
}

std::vector<KindRates> kind_rates(const std::vector<UnitRates>& units) {
  std::vector<KindRates> kinds;  // in the order first seen
  std::unordered_map<std::string, std::size_t> index;
  for (const UnitRates& unit : units) {
    if (unit.name == unit.context) continue;  // a context never seen: no kind
    const auto [found, first] = index.try_emplace(unit.kind, kinds.size());
    if (first) kinds.push_back(KindRates{unit.kind, unit.item_word, unit.reports_bytes, 0, 0, {}, {}, 0, 0});
    KindRates* kind = &kinds[found->second];
    ++kind->units;
    kind->items += unit.items;
    kind->bytes += unit.bytes;
    if (kind->item_word.empty()) kind->item_word = unit.item_word;
    kind->reports_bytes = kind->reports_bytes || unit.reports_bytes;
    if (!unit.items_per_second && !unit.bytes_per_second) continue;
    ++kind->units_with_rate;
    if (unit.items_per_second) kind->items_per_second = kind->items_per_second.value_or(0) + *unit.items_per_second;
    if (unit.bytes_per_second) kind->bytes_per_second = kind->bytes_per_second.value_or(0) + *unit.bytes_per_second;
  }
  return kinds;
}

}  // namespace daqx::console
