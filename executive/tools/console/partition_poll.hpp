// One look at the executives of a partition through GET /api/summary (one request per context, over a
// ContextPoller's pool): per context whether it answered, its applications (state, reason, counters), its
// connections, transport counters and pool use. What the live tables of daqx-launch and daqxctl watch and the
// launcher's end-of-run summary are made from.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "daqx/control/context_poller.hpp"

namespace daqx::console {

using Clock = std::chrono::steady_clock;

// One application as its context reported it.
struct UnitSample {
  std::string name;   // "evb/bu/1": class short name and instance, unique in the partition
  std::string class_name;
  std::uint32_t tid = 0;
  std::string state;  // Halted, Configured, Enabled, Failed, ...
  std::string reason;  // why it is Failed
  std::uint64_t run = 0;
  std::map<std::string, double> counters;  // the unlabelled counters (amounts that only grow within a run)
};

// Where the blocks of one memory pool are: in use of all it holds now (bytes).
struct PoolUse {
  std::string name;
  double bytes_used = 0;
  double bytes_total = 0;
  double failed_allocations = 0;
};

// The down_state of a context the run has lost within the partition's allowance (<Launch><Expendable>): not
// asked, not waited for; the run summary names its units.
inline constexpr const char* kLostState = "lost";

struct ContextSample {
  std::string url;
  bool answered = false;
  std::string error;     // why it did not answer (or answered what could not be read)
  std::string down_state = "unreachable";  // what its units show when it did not answer (the launcher: "restarting",
                                           // or kLostState with `error` saying why)
  Clock::time_point at;  // when its answer came (the counters were read just before)
  std::uint64_t run = 0;
  std::vector<UnitSample> units;
  std::size_t connections_up = 0;
  std::size_t connections_total = 0;
  std::map<std::string, double> transport_counters;  // "tcp send_errors" -> value, summed over endpoints
  double connections_starved = 0;  // the transports' gauge: connections left without receive buffers now
  std::vector<PoolUse> pools;
};

// Asks every context of `urls` for its summary over `poller` (each request bounded by `timeout`, so that one that
// hangs costs `timeout` once, not per context). Never throws: a context that does not answer comes back with
// answered == false and the reason. The results are in the order of `urls`.
std::vector<ContextSample> poll_contexts(ContextPoller& poller, const std::vector<std::string>& urls,
                                         std::chrono::milliseconds timeout);

}  // namespace daqx::console
