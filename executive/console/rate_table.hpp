// The tables of units and their rates that daqx-launch --drive and daqxctl watch print: aligned columns with a
// heading for a terminal, or plain self-contained lines (one per unit per sample) for a file or a pipe.
#pragma once

#include <string>
#include <vector>

#include "partition_poll.hpp"
#include "unit_rates.hpp"

namespace daqx::console {

enum class Layout {
  terminal,  // a heading line and column names; redrawn in place by LiveView
  plain,     // every line starts with `prefix` and stands alone: grep for a unit and get its history
};

// Rows of cells aligned in columns, and free lines between them (not aligned).
class TextTable {
 public:
  void row(std::vector<std::string> cells);
  void text(std::string line);
  // Columns at least this wide, so that plain lines of successive samples line up as the figures change.
  void minimum_widths(std::vector<std::size_t> widths) { minimum_widths_ = std::move(widths); }
  std::vector<std::string> lines(const std::string& prefix = {}) const;

 private:
  struct Line {
    bool is_row = false;
    std::vector<std::string> cells;
  };
  std::vector<Line> lines_;
  std::vector<std::size_t> minimum_widths_;
};

// One row per unit (state, rate, bandwidth, amounts this run; a Failed unit's reason, an unreachable context's
// error), then one per kind with more than one unit: the sum of the rates of its units that have one.
std::vector<std::string> unit_table(const std::vector<UnitRates>& units, Layout layout, const std::string& heading,
                                    const std::string& prefix);

// Per context a line (answering or not, run, connections up, pool use) with its units under it, then the kinds.
std::vector<std::string> partition_table(const std::vector<ContextSample>& contexts, const std::vector<UnitRates>& units,
                                         Layout layout, const std::string& heading, const std::string& prefix);

// "local-evb: 12.0 / 20 s": `elapsed` of `total` seconds (total 0: no end set).
std::string elapsed_of(double elapsed, double total);

}  // namespace daqx::console
