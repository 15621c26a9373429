// The counters every peer transport keeps, with one set of names, so that pages, the JSON API and
// /metrics read the same over every transport, and a test written once checks any of them.
#pragma once

#include <atomic>
#include <cstdint>
#include <vector>

#include "daqx/api/counters.hpp"

namespace daqx::pt {

// One connection's counters, updated with relaxed atomics by whichever thread did the work.
struct ConnectionCounters {
  std::atomic<std::uint64_t> frames{0};        // sent (outgoing) or received and accepted (incoming)
  std::atomic<std::uint64_t> bytes{0};
  std::atomic<std::uint64_t> would_blocks{0};  // outgoing: posts refused because the queue was full
  std::atomic<std::uint64_t> errors{0};        // outgoing: failures and the frames lost with them
  std::atomic<std::uint64_t> reconnects{0};    // outgoing: times re-established
  std::atomic<std::uint64_t> credit_waits{0};  // outgoing: times it had frames to send and no credits
  std::atomic<std::uint64_t> messages{0};      // outgoing: messages or writes the frames went out in
  // Incoming, where receive buffers are posted for the sender (credits):
  std::atomic<std::uint64_t> receive_buffers{0};  // buffers it holds now, posted or with messages not yet taken
  std::atomic<std::uint64_t> starved{0};          // 1 while its sender has no credit and no buffer can be posted
  std::atomic<std::uint64_t> starvations{0};      // times it was left so
};

// What happens to a transport as a whole rather than to one connection.
struct TransportEvents {
  std::atomic<std::uint64_t> connections_accepted{0};
  std::atomic<std::uint64_t> requests_refused{0};    // connection requests refused or failed
  std::atomic<std::uint64_t> bad_streams{0};         // incoming connections closed for a malformed or misaddressed frame
  std::atomic<std::uint64_t> closed_by_peer{0};      // incoming connections that ended between frames
  std::atomic<std::uint64_t> truncated_frames{0};    // incoming connections that ended in the middle of a frame
  std::atomic<std::uint64_t> receive_pool_waits{0};  // times receiving waited for receive blocks
  std::atomic<std::uint64_t> delivery_waits{0};      // times receiving paused because an application's queue was full
  std::atomic<std::uint64_t> completion_errors{0};   // operations the network completed with an error
  std::atomic<std::uint64_t> over_limit{0};          // incoming connections refused: maxIncoming were open
  std::atomic<std::uint64_t> starvations{0};         // times an incoming connection was left without a buffer
  std::atomic<std::uint64_t> starved_now{0};         // incoming connections without a buffer now (a gauge)
};

// The per-connection metrics of the page's connection table.
void add_outgoing_metrics(std::vector<Metric>& metrics, const ConnectionCounters& c);
void add_incoming_metrics(std::vector<Metric>& metrics, const ConnectionCounters& c);

// A transport's totals, summed over its connections (closed ones included).
struct TransportTotals {
  std::uint64_t frames_sent = 0;
  std::uint64_t bytes_sent = 0;
  std::uint64_t frames_received = 0;
  std::uint64_t bytes_received = 0;
  std::uint64_t would_blocks = 0;
  std::uint64_t send_errors = 0;
  std::uint64_t reconnects = 0;
  std::uint64_t credit_waits = 0;
  std::uint64_t messages_sent = 0;
  std::uint64_t incoming_connections = 0;  // open now

  void add_outgoing(const ConnectionCounters& c) noexcept;
  void add_incoming(const ConnectionCounters& c) noexcept;
};

// Every transport reports these, with these names.
void report_totals(MetricSink& sink, const TransportTotals& totals, const TransportEvents& events);

}  // namespace daqx::pt
