// The end of a run as a shift crew reads it: per unit and per kind, what it built or moved (a count and bytes),
// the average rates over the time the run was enabled, what was lost or dropped, errors; no settings. And every
// counter as reported, in a file for scripts.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "partition_poll.hpp"
#include "unit_rates.hpp"

namespace daqx::console {

// `enabled_seconds`: from the end of enable to the end of stop (stop drains, and what it drains is counted).
// Contexts the run lost (down_state kLostState) get a line each naming their units and why.
std::vector<std::string> run_summary(const std::vector<UnitTotals>& units, const std::vector<ContextSample>& contexts,
                                     double enabled_seconds, std::uint64_t run);

// Counters that say something was lost or dropped, or went wrong (by name: lost, dropped, incomplete, ...;
// error, corrupt, malformed, ...).
bool is_loss_counter(const std::string& name);
bool is_error_counter(const std::string& name);
// The streams' lines of the run summary: per publishing unit, the records it sent, the events its subscribers'
// policies dropped, the subscribers it lost and the subscriptions it refused; none when no unit published.
std::vector<std::string> stream_lines(const std::vector<UnitTotals>& units);
// A transport counter worth a line of the run summary besides errors: reconnects, refused connections, and
// connections left without receive buffers.
bool is_transport_trouble(const std::string& name);

// "UNIT COUNTER VALUE" per line for every counter of every unit as last reported by `contexts` (zeros
// included), then "CONTEXT PROTOCOL COUNTER VALUE" per transport counter. False when the file cannot be written.
bool write_counters(const std::string& path, const std::vector<ContextSample>& contexts, std::uint64_t run);

}  // namespace daqx::console
