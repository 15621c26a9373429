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

// Tables of more units than this are folded: the totals per kind first, then only the units (and contexts) that
// need attention, and one line that counts the rest, so that a partition of hundreds of units reads in a screen.
inline constexpr std::size_t kFoldAbove = 32;

// One row per unit (state, rate, bandwidth, amounts this run; a Failed unit's reason, an unreachable context's
// error), then one per kind with more than one unit: the sum of the rates of its units that have one. Folded
// above kFoldAbove units.
std::vector<std::string> unit_table(const std::vector<UnitRates>& units, Layout layout, const std::string& heading,
                                    const std::string& prefix);

// Per context a line (answering or not, run, connections up, pool use) with its units under it, then the kinds.
// Folded above kFoldAbove units: the kinds, then the contexts that need attention (not answering, connections
// down or starved, failed allocations) with their units, then the other units that need attention.
std::vector<std::string> partition_table(const std::vector<ContextSample>& contexts, const std::vector<UnitRates>& units,
                                         Layout layout, const std::string& heading, const std::string& prefix);

// Why a unit needs a look, or empty: Failed, or not in the state most units are in (`usual_state`: unreachable,
// restarting, left behind by a transition). A rate of zero is not a reason: at a few events per second per unit a
// one-second window often holds none.
std::string attention_of(const UnitRates& unit, const std::string& usual_state);

// "local-evb: 12.0 / 20 s": `elapsed` of `total` seconds (total 0: no end set).
std::string elapsed_of(double elapsed, double total);

}  // namespace daqx::console
