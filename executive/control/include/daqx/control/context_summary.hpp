// One context as GET /api/summary tells it (docs/control-api.md, "Summary"): what every watcher of a running
// partition reads each round (daqx-launch --drive, daqxctl watch, the partition dashboards).
#pragma once

#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace daqx {

struct SubscriptionSummary {  // one subscription to a stream the application publishes
  std::string stream;
  std::string subscriber;  // "tid 300" or "client 127.0.0.1:41236"
  std::string policy;      // its text form, "sample:100"
  std::map<std::string, double> counters;  // delivered, dropped, skipped
  std::map<std::string, double> gauges;    // queued, lag
};

struct UnitSummary {  // one application
  std::uint32_t tid = 0;
  std::string class_name;
  std::uint32_t instance = 0;
  std::string name;   // "evb/bu/1"
  std::string state;  // Halted, Configured, Enabled, Failed
  std::string reason;  // why it is Failed
  std::uint64_t run = 0;
  std::map<std::string, double> counters;  // its unlabelled counters (amounts that only grow within a run)
  std::map<std::string, double> gauges;    // its unlabelled gauges (values now)
  std::vector<SubscriptionSummary> subscriptions;  // the first few (the summary's limit)
  std::size_t subscriptions_total = 0;             // all of them
};

struct TransportSummary {
  std::string protocol;
  std::string endpoint;
  std::size_t connections_up = 0;
  std::size_t connections_total = 0;
  std::vector<std::string> down;  // remote addresses of the first few connections down (all down: total - up)
  std::map<std::string, double> counters;
  std::map<std::string, double> gauges;
};

struct PoolSummary {
  std::string name;
  std::uint64_t bytes_reserved = 0;
  std::uint64_t bytes_total = 0;  // blocks carved so far times their size
  std::uint64_t bytes_used = 0;
  std::uint64_t blocks_total = 0;
  std::uint64_t blocks_used = 0;
  std::uint64_t failed_allocations = 0;
};

struct ContextSummary {
  std::uint64_t run = 0;       // the run its applications are enabled in; 0: none
  double run_seconds = NAN;    // how long that run has been on here; NaN: none
  double uptime_seconds = NAN;
  std::map<std::string, double> executive_counters;  // frames_from_transports, bad_frames, ...
  std::vector<UnitSummary> units;
  std::vector<TransportSummary> transports;
  std::vector<PoolSummary> pools;
};

// The document of GET /api/summary; throws std::runtime_error naming what is not as documented.
ContextSummary parse_context_summary(const std::string& json);

}  // namespace daqx
