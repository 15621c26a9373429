#include "rate_table.hpp"

#include <algorithm>
#include <cstdio>
#include <unordered_map>

#include "human_units.hpp"

namespace daqx::console {
namespace {

const std::vector<std::string> kColumns{"UNIT", "STATE", "RATE", "BANDWIDTH", "THIS RUN", ""};
// Wide enough for "restarting", "123456 fragments/s", "999 MB/s", "12345678 fragments".
const std::vector<std::size_t> kMinimumWidths{0, 11, 18, 10, 18};

std::vector<std::string> unit_cells(const UnitRates& unit, const std::string& name, const std::string& attention = {}) {
  std::string note;
  if (unit.state == "Failed") note = "FAILED: " + unit.reason;
  else if (!unit.reason.empty()) note = unit.reason;
  if (!attention.empty() && unit.state != "Failed" && unit.reason.empty()) note = attention;
  return {name,
          unit.state,
          format_rate(unit.items_per_second, unit.item_word),
          unit.reports_bytes ? format_bandwidth(unit.bytes_per_second) : "-",
          unit.item_word.empty() ? "-" : format_count(unit.items, unit.item_word),
          (unit.reports_bytes ? format_bytes(unit.bytes) : std::string()) + (note.empty() ? "" : "  " + note)};
}

// `every_kind`: also a kind of one unit (a folded table has no row of its own for that unit).
void add_kinds(TextTable& table, const std::vector<KindRates>& kinds, const std::string& first_cell_prefix,
               bool every_kind) {
  for (const KindRates& kind : kinds) {
    if (kind.units < 2 && !every_kind) continue;
    const std::string state = kind.units_with_rate == kind.units
                                  ? "total"
                                  : "total of " + std::to_string(kind.units_with_rate) + "/" + std::to_string(kind.units);
    table.row({first_cell_prefix + kind.kind + " (" + std::to_string(kind.units) + ")", state,
               format_rate(kind.items_per_second, kind.item_word),
               kind.reports_bytes ? format_bandwidth(kind.bytes_per_second) : "-",
               kind.item_word.empty() ? "-" : format_count(kind.items, kind.item_word),
               kind.reports_bytes ? format_bytes(kind.bytes) : ""});
  }
}

std::string context_line(const ContextSample& context) {
  if (!context.answered) {
    std::string line = context.url + "  " + context.down_state;
    if (!context.error.empty()) line += ": " + context.error;
    return line;
  }
  std::string line = context.url + "  answering";
  if (context.run != 0) line += "  run " + std::to_string(context.run);
  line += "  connections " + std::to_string(context.connections_up) + "/" + std::to_string(context.connections_total) +
          " up";
  if (context.connections_starved > 0)
    line += "  " + format_count(context.connections_starved, "connections starved");
  for (const PoolUse& pool : context.pools) {
    char percent[16];
    std::snprintf(percent, sizeof percent, "%.0f%%", pool.bytes_total > 0 ? 100 * pool.bytes_used / pool.bytes_total : 0.0);
    line += "  pool " + pool.name + " " + percent + " of " + format_bytes(pool.bytes_total);
    if (pool.failed_allocations > 0) line += " (" + format_count(pool.failed_allocations, "failed allocations") + ")";
  }
  return line;
}

// A context worth its line in a folded table: not answering, a connection down or starved, an allocation failed.
bool context_needs_attention(const ContextSample& context) {
  if (!context.answered || context.connections_up < context.connections_total || context.connections_starved > 0)
    return true;
  return std::any_of(context.pools.begin(), context.pools.end(), [](const PoolUse& pool) { return pool.failed_allocations > 0; });
}

// What a folded table needs of the whole: the state most units are in.
struct Usual {
  std::string state;

  explicit Usual(const std::vector<UnitRates>& units) {
    std::unordered_map<std::string, std::size_t> states;
    std::size_t most = 0;
    for (const UnitRates& unit : units) {
      const std::size_t count = ++states[unit.state];
      if (count > most) {
        most = count;
        state = unit.state;
      }
    }
  }

  std::string attention(const UnitRates& unit) const { return attention_of(unit, state); }

  // "251 units Enabled and moving, not listed": what the folded rows leave out.
  std::string rest(std::size_t count) const {
    return std::to_string(count) + (count == 1 ? " unit " : " units ") + state +
           ", not listed (tables of up to " + std::to_string(kFoldAbove) +
           " units list every one)";
  }
};

void add_heading(TextTable& table, Layout layout, const std::string& heading) {
  if (layout != Layout::terminal) return;
  table.text(heading);
  table.row(kColumns);
}

}  // namespace

std::string attention_of(const UnitRates& unit, const std::string& usual_state) {
  if (unit.state == "Failed") return "FAILED";
  if (unit.state != usual_state) return "not " + usual_state;
  return {};
}

void TextTable::row(std::vector<std::string> cells) { lines_.push_back(Line{true, std::move(cells)}); }

void TextTable::text(std::string line) { lines_.push_back(Line{false, {std::move(line)}}); }

std::vector<std::string> TextTable::lines(const std::string& prefix) const {
  std::vector<std::size_t> widths = minimum_widths_;
  for (const Line& line : lines_) {
    if (!line.is_row) continue;
    widths.resize(std::max(widths.size(), line.cells.size()));
    for (std::size_t i = 0; i < line.cells.size(); ++i) widths[i] = std::max(widths[i], line.cells[i].size());
  }
  std::vector<std::string> out;
  for (const Line& line : lines_) {
    std::string text = prefix;
    if (!line.is_row) {
      text += line.cells.front();
    } else {
      for (std::size_t i = 0; i < line.cells.size(); ++i) {
        text += line.cells[i];
        if (i + 1 < line.cells.size()) text.append(widths[i] - line.cells[i].size() + 2, ' ');
      }
    }
    while (!text.empty() && text.back() == ' ') text.pop_back();
    out.push_back(std::move(text));
  }
  return out;
}

std::vector<std::string> unit_table(const std::vector<UnitRates>& units, Layout layout, const std::string& heading,
                                    const std::string& prefix) {
  TextTable table;
  table.minimum_widths(kMinimumWidths);
  add_heading(table, layout, heading);
  const std::vector<KindRates> kinds = kind_rates(units);
  if (units.size() <= kFoldAbove) {
    for (const UnitRates& unit : units) table.row(unit_cells(unit, unit.name));
    add_kinds(table, kinds, "", false);
  } else {
    add_kinds(table, kinds, "", true);
    const Usual usual(units);
    std::size_t fine = 0;
    for (const UnitRates& unit : units) {
      const std::string attention = usual.attention(unit);
      if (attention.empty()) ++fine;
      else table.row(unit_cells(unit, unit.name, attention));
    }
    table.text(usual.rest(fine));
  }
  return table.lines(layout == Layout::plain ? prefix : std::string());
}

std::vector<std::string> partition_table(const std::vector<ContextSample>& contexts, const std::vector<UnitRates>& units,
                                         Layout layout, const std::string& heading, const std::string& prefix) {
  TextTable table;
  table.minimum_widths(kMinimumWidths);
  const bool terminal = layout == Layout::terminal;
  add_heading(table, layout, heading);
  // Each context's units in one pass: no scan of every unit per context.
  std::unordered_map<std::string, std::vector<const UnitRates*>> held;
  for (const UnitRates& unit : units)
    if (unit.name != unit.context) held[unit.context].push_back(&unit);
  const std::vector<KindRates> kinds = kind_rates(units);
  // On a terminal the context line above says where; a plain line says it itself.
  auto name_of = [&](const UnitRates& unit, const ContextSample& context) {
    return terminal ? "  " + unit.name : context.url + " " + unit.name;
  };
  const std::string kind_prefix = terminal ? "" : "partition ";
  if (units.size() <= kFoldAbove) {
    for (const ContextSample& context : contexts) {
      table.text(context_line(context));
      if (const auto found = held.find(context.url); found != held.end())
        for (const UnitRates* unit : found->second) table.row(unit_cells(*unit, name_of(*unit, context)));
    }
    add_kinds(table, kinds, kind_prefix, false);
    return table.lines(terminal ? std::string() : prefix);
  }
  add_kinds(table, kinds, kind_prefix, true);
  const Usual usual(units);
  std::size_t fine_contexts = 0, fine_units = 0;
  for (const ContextSample& context : contexts) {
    const auto found = held.find(context.url);
    const bool listed = context_needs_attention(context);
    std::vector<std::pair<const UnitRates*, std::string>> noted;
    if (found != held.end())
      for (const UnitRates* unit : found->second) {
        std::string attention = usual.attention(*unit);
        if (listed || !attention.empty()) noted.emplace_back(unit, std::move(attention));
        else ++fine_units;
      }
    if (!listed && noted.empty()) {
      ++fine_contexts;
      continue;
    }
    table.text(context_line(context));
    for (const auto& [unit, attention] : noted) table.row(unit_cells(*unit, name_of(*unit, context), attention));
  }
  table.text(std::to_string(fine_contexts) + " contexts answering with every connection up, and " + usual.rest(fine_units));
  return table.lines(terminal ? std::string() : prefix);
}

std::string elapsed_of(double elapsed, double total) {
  char text[64];
  if (total > 0)
    std::snprintf(text, sizeof text, "%.1f / %g s", elapsed, total);
  else
    std::snprintf(text, sizeof text, "%.1f s", elapsed);
  return text;
}

}  // namespace daqx::console
