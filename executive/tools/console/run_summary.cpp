#include "run_summary.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <unordered_map>

#include "human_units.hpp"
#include "rate_table.hpp"

namespace daqx::console {
namespace {

bool contains_any(const std::string& name, std::initializer_list<const char*> words) {
  return std::any_of(words.begin(), words.end(), [&](const char* word) { return name.find(word) != std::string::npos; });
}

// "events_lost 12, bu_drops 1", or "none".
std::string listed(const std::map<std::string, double>& counters) {
  std::string text;
  for (const auto& [name, value] : counters) {
    if (value == 0) continue;
    if (!text.empty()) text += ", ";
    text += name + " " + format_count(value, "");
  }
  return text.empty() ? "none" : text;
}

struct Line {
  std::string name;
  std::string item_word;
  bool reports_bytes = false;
  double items = 0;
  double bytes = 0;
  std::map<std::string, double> losses;
  std::map<std::string, double> errors;
};

Line line_of(const UnitTotals& unit) {
  Line line;
  line.name = unit.name;
  line.item_word = unit.throughput.item_word;
  line.reports_bytes = !unit.throughput.bytes_counter.empty();
  for (const auto& [name, value] : unit.counters) {
    if (name == unit.throughput.items_counter) line.items = value;
    if (name == unit.throughput.bytes_counter) line.bytes = value;
    if (is_error_counter(name)) line.errors[name] += value;
    else if (is_loss_counter(name)) line.losses[name] += value;
  }
  return line;
}

void add_row(TextTable& table, const Line& line, double seconds) {
  const bool has_items = !line.item_word.empty();
  table.row({line.name, has_items ? format_count(line.items, line.item_word) : "-",
             line.reports_bytes ? format_bytes(line.bytes) : "-",
             has_items && seconds > 0 ? format_rate(line.items / seconds, line.item_word) : "-",
             line.reports_bytes && seconds > 0 ? format_bandwidth(line.bytes / seconds) : "-", listed(line.losses),
             listed(line.errors)});
}

// "lost: evb/bu/3 (context URL, why)" per context the run lost within the partition's allowance, with the units
// seen in it (its counters up to its last answer are in the table above).
std::vector<std::string> lost_contexts(const std::vector<UnitTotals>& units, const std::vector<ContextSample>& contexts) {
  std::vector<std::string> lines;
  for (const ContextSample& context : contexts) {
    if (context.answered || context.down_state != kLostState) continue;
    std::string names;
    for (const UnitTotals& unit : units)
      if (unit.context == context.url) names.append(names.empty() ? "" : ", ").append(unit.name);
    lines.push_back("lost: " + (names.empty() ? std::string("its units") : names) + " (context " + context.url + ", " +
                    context.error + ")");
  }
  return lines;
}

}  // namespace

bool is_error_counter(const std::string& name) {
  return contains_any(name, {"error", "corrupt", "malformed", "failure", "exception", "bad_", "truncated"});
}

bool is_transport_trouble(const std::string& name) {
  return name == "reconnects" || contains_any(name, {"starv", "refused", "over_limit"});
}

bool is_loss_counter(const std::string& name) {
  // Events withheld from the output (a BU's events held for a block subscriber when the run stopped) are lost.
  if (contains_any(name, {"withheld"})) return true;
  // A stream's drops are its subscribers' declared policies at work, not events the run lost: they have a line
  // of their own (stream_lines).
  if (name.starts_with("stream_")) return false;
  return contains_any(name, {"lost", "drop", "abandon", "incomplete", "discard", "unhandled", "_downs"});
}

std::vector<std::string> stream_lines(const std::vector<UnitTotals>& units) {
  std::vector<std::string> lines{"streams (per publisher; docs/monitoring.md):"};
  for (const UnitTotals& unit : units) {
    auto count = [&](const char* name) {
      const auto it = unit.counters.find(name);
      return it == unit.counters.end() ? 0.0 : it->second;
    };
    const double sent = count("stream_records_sent");
    const double dropped = count("stream_events_dropped");
    const double lost = count("stream_subscribers_lost");
    const double refused = count("stream_subscriptions_refused");
    if (sent == 0 && dropped == 0 && lost == 0 && refused == 0) continue;
    std::string line = "  ";
    line.append(unit.name).append(": ").append(format_count(sent, "records")).append(" sent, ");
    line.append(format_count(dropped, "events")).append(" dropped by subscribers' policies, ");
    line.append(format_count(lost, "subscribers")).append(" lost, ");
    line.append(format_count(refused, "subscriptions")).append(" refused");
    lines.push_back(std::move(line));
  }
  if (lines.size() == 1) lines.clear();  // no unit published
  return lines;
}

std::vector<std::string> run_summary(const std::vector<UnitTotals>& units, const std::vector<ContextSample>& contexts,
                                     double enabled_seconds, std::uint64_t run) {
  TextTable table;
  table.text("run " + std::to_string(run) + ": " + format_seconds(enabled_seconds) +
             " enabled; averages are over that time; bytes in decimal units (1 GB = 10^9 B)");
  table.row({"UNIT", "BUILT OR MOVED", "DATA", "AVERAGE RATE", "AVERAGE BANDWIDTH", "LOST OR DROPPED", "ERRORS"});
  std::vector<Line> kinds;  // in the order first seen
  std::vector<std::size_t> kind_units;
  std::unordered_map<std::string, std::size_t> kind_index;
  for (const UnitTotals& unit : units) {
    const Line line = line_of(unit);
    add_row(table, line, enabled_seconds);
    const auto [found, first] = kind_index.try_emplace(unit.kind, kinds.size());
    if (first) {
      kinds.push_back(Line{unit.kind, line.item_word, line.reports_bytes, 0, 0, {}, {}});
      kind_units.push_back(0);
    }
    Line* kind = &kinds[found->second];
    ++kind_units[found->second];
    kind->items += line.items;
    kind->bytes += line.bytes;
    for (const auto& [name, value] : line.losses) kind->losses[name] += value;
    for (const auto& [name, value] : line.errors) kind->errors[name] += value;
  }
  for (std::size_t k = 0; k < kinds.size(); ++k) {
    if (kind_units[k] < 2) continue;
    Line total = kinds[k];
    total.name += " (" + std::to_string(kind_units[k]) + ")";
    add_row(table, total, enabled_seconds);
  }
  // The transports' own troubles, per context: a reconnect or a send error mid-run is worth a line, and so is a
  // connection refused or left without receive buffers (its sender without credit: nothing moves on it).
  std::vector<std::string> transports;
  for (const ContextSample& context : contexts) {
    std::map<std::string, double> troubles;
    for (const auto& [name, value] : context.transport_counters) {
      const std::string counter = name.substr(name.find(' ') + 1);
      if ((is_error_counter(counter) || is_transport_trouble(counter)) && value != 0) troubles[name] = value;
    }
    const std::string text = listed(troubles);
    if (text != "none") transports.push_back("  " + context.url + ": " + text);
  }
  table.text(transports.empty() ? "transports: no errors, no reconnects, no refused or starved connections"
                                : "transports:");
  for (std::string& line : transports) table.text(std::move(line));
  for (std::string& line : stream_lines(units)) table.text(std::move(line));
  for (const std::string& line : lost_contexts(units, contexts)) table.text(line);
  return table.lines();
}

namespace {

// Exactly as counted: whole numbers in full, the rare fractional counter (seconds) with its fraction.
std::string exact(double value) {
  char text[48];
  std::snprintf(text, sizeof text, value == std::floor(value) && std::fabs(value) < 1e18 ? "%.0f" : "%.9g", value);
  return text;
}

}  // namespace

bool write_counters(const std::string& path, const std::vector<ContextSample>& contexts, std::uint64_t run) {
  std::ofstream out(path);
  out << "# every counter each unit reported at the end of run " << run
      << " (UNIT COUNTER VALUE), then each transport's (CONTEXT PROTOCOL COUNTER VALUE)\n";
  for (const ContextSample& context : contexts) {
    if (!context.answered) {
      out << "# " << context.url << " did not answer: " << context.error << "\n";
      continue;
    }
    for (const UnitSample& unit : context.units)
      for (const auto& [name, value] : unit.counters) out << unit.name << " " << name << " " << exact(value) << "\n";
  }
  for (const ContextSample& context : contexts)
    for (const auto& [name, value] : context.transport_counters)
      out << context.url << " " << name << " " << exact(value) << "\n";
  out.close();
  return static_cast<bool>(out);
}

}  // namespace daqx::console
