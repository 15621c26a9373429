// The plan before start: what each context of a partition will use (connections, descriptors, receive,
// registered and huge-page memory, threads, listening ports), computed from the partition's declared parameters,
// and whether it fits the limits of the host that runs it. daqx-launch --plan and daqx-executive --check print it;
// both refuse a partition that does not fit before anything starts. docs/deploying.md ("Sizing a context").
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "daqx/executive/partition.hpp"
#include "daqx/services/host_limits.hpp"

namespace daqx {

// The threads a daqx-executive's control server runs requests on, counted in every context's plan: the control
// library sizes its server by this (kControlServerThreads), so that the plan counts what runs.
inline constexpr unsigned kControlRequestThreads = 16;

// What one context will use, at most.
struct ContextNeeds {
  std::string url;
  std::string host;                  // of its URL: whose limits apply
  std::size_t outgoing = 0;          // planned connections (the connection plan)
  std::size_t incoming = 0;
  std::size_t descriptors = 0;       // per connection as its transport says, and a margin for the executive
  std::size_t receive_bytes = 0;     // the transports' own pools and per-incoming buffers
  std::size_t pool_bytes = 0;        // every pool: the applications' and the transports'
  std::size_t registered_bytes = 0;  // pool_bytes where a transport registers memory (locked), else 0
  std::size_t huge_page_bytes = 0;   // what pools a policy rule puts on huge pages hold when made
  std::size_t threads = 0;           // the executive's, the applications' (dispatch and workers), the transports'
  std::vector<std::uint16_t> listening_ports;  // the control port and the endpoints' (0, the system's choice, left out)
  std::vector<std::string> not_counted;        // what is not in the figures (a module that did not load here)
};

// One limit a context (or a host's contexts together) goes past.
struct PlanShortfall {
  std::string context;   // URL; for a host-wide resource the first context on that host
  std::string host;
  std::string resource;  // "open files", "locked memory", "huge pages", "listening port"
  std::string need;
  std::string limit;
  std::string advice;
  bool refused = true;   // false: only worth saying (huge pages fall back to normal pages)
  std::string text() const;  // "context http://h:9000: open files: needs 1290, host h allows 1024 (...): advice"
};

// Checks every context against the limits of its host (`limits_of(host)`; null: not known, not checked).
std::vector<PlanShortfall> check_fit(const std::vector<ContextNeeds>& contexts,
                                     const std::function<const HostLimits*(const std::string& host)>& limits_of);

// The table: a header, one line per context, a line of totals; then each host's limits.
std::vector<std::string> describe_needs(const std::vector<ContextNeeds>& contexts);
// "host NAME: open files ..., locked memory ..., huge pages ..., ephemeral ports LOW-HIGH"; `host` as the
// partition names it, when that is not the name the host gives itself.
std::string describe_limits(const HostLimits& limits, const std::string& host = "");

}  // namespace daqx
