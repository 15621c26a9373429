#include "rate_table.hpp"

#include <algorithm>
#include <cstdio>

#include "human_units.hpp"

namespace daqx::console {
namespace {

const std::vector<std::string> kColumns{"UNIT", "STATE", "RATE", "BANDWIDTH", "THIS RUN", ""};
// Wide enough for "restarting", "123456 fragments/s", "999 MB/s", "12345678 fragments".
const std::vector<std::size_t> kMinimumWidths{0, 11, 18, 10, 18};

std::vector<std::string> unit_cells(const UnitRates& unit, const std::string& name) {
  std::string note;
  if (unit.state == "Failed") note = "FAILED: " + unit.reason;
  else if (!unit.reason.empty()) note = unit.reason;
  return {name,
          unit.state,
          format_rate(unit.items_per_second, unit.item_word),
          unit.reports_bytes ? format_bandwidth(unit.bytes_per_second) : "-",
          unit.item_word.empty() ? "-" : format_count(unit.items, unit.item_word),
          (unit.reports_bytes ? format_bytes(unit.bytes) : std::string()) + (note.empty() ? "" : "  " + note)};
}

void add_kinds(TextTable& table, const std::vector<UnitRates>& units, const std::string& first_cell_prefix) {
  for (const KindRates& kind : kind_rates(units)) {
    if (kind.units < 2) continue;
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
  for (const PoolUse& pool : context.pools) {
    char percent[16];
    std::snprintf(percent, sizeof percent, "%.0f%%", pool.bytes_total > 0 ? 100 * pool.bytes_used / pool.bytes_total : 0.0);
    line += "  pool " + pool.name + " " + percent + " of " + format_bytes(pool.bytes_total);
  }
  return line;
}

}  // namespace

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
  if (layout == Layout::terminal) {
    table.text(heading);
    table.row(kColumns);
  }
  for (const UnitRates& unit : units) table.row(unit_cells(unit, unit.name));
  add_kinds(table, units, "");
  return table.lines(layout == Layout::plain ? prefix : std::string());
}

std::vector<std::string> partition_table(const std::vector<ContextSample>& contexts, const std::vector<UnitRates>& units,
                                         Layout layout, const std::string& heading, const std::string& prefix) {
  TextTable table;
  table.minimum_widths(kMinimumWidths);
  const bool terminal = layout == Layout::terminal;
  if (terminal) {
    table.text(heading);
    table.row(kColumns);
  }
  for (const ContextSample& context : contexts) {
    table.text(context_line(context));
    for (const UnitRates& unit : units) {
      if (unit.context != context.url || unit.name == unit.context) continue;
      // On a terminal the context line above says where; a plain line says it itself.
      table.row(unit_cells(unit, terminal ? "  " + unit.name : context.url + " " + unit.name));
    }
  }
  add_kinds(table, units, terminal ? "" : "partition ");
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
