// The counters every peer transport keeps, with one set of names, so that pages, the JSON API and
// /metrics read the same over tcp, ofi and ibv, and a test written once checks any transport.
#pragma once

#include <atomic>
#include <cstdint>
#include <vector>

#include "daqx/executive/counters.hpp"

namespace daqx {

// One connection's counters, updated with relaxed atomics by whichever thread did the work.
struct ConnectionCounters {
  std::atomic<std::uint64_t> frames{0};        // sent (outgoing) or received and accepted (incoming)
  std::atomic<std::uint64_t> bytes{0};
  std::atomic<std::uint64_t> would_blocks{0};  // outgoing: posts refused because the queue was full
  std::atomic<std::uint64_t> errors{0};        // outgoing: failures and the frames lost with them
  std::atomic<std::uint64_t> reconnects{0};    // outgoing: times re-established
};

// The per-connection metrics of an outgoing connection (the page's connection table).
inline void add_outgoing_metrics(std::vector<Metric>& metrics, const ConnectionCounters& c) {
  auto d = [](const std::atomic<std::uint64_t>& v) { return static_cast<double>(v.load(std::memory_order_relaxed)); };
  metrics.push_back({"frames_sent", Metric::Kind::counter, d(c.frames), "frames sent", {}});
  metrics.push_back({"bytes_sent", Metric::Kind::counter, d(c.bytes), "bytes sent", {}});
  metrics.push_back({"would_blocks", Metric::Kind::counter, d(c.would_blocks), "posts refused: queue full", {}});
  metrics.push_back({"errors", Metric::Kind::counter, d(c.errors), "failures and frames lost with them", {}});
  metrics.push_back({"reconnects", Metric::Kind::counter, d(c.reconnects), "times re-established", {}});
}

inline void add_incoming_metrics(std::vector<Metric>& metrics, const ConnectionCounters& c) {
  auto d = [](const std::atomic<std::uint64_t>& v) { return static_cast<double>(v.load(std::memory_order_relaxed)); };
  metrics.push_back({"frames_received", Metric::Kind::counter, d(c.frames), "frames received", {}});
  metrics.push_back({"bytes_received", Metric::Kind::counter, d(c.bytes), "bytes received", {}});
}

// A transport's totals, summed over its connections (closed ones included).
struct TransportTotals {
  std::uint64_t frames_sent = 0;
  std::uint64_t bytes_sent = 0;
  std::uint64_t frames_received = 0;
  std::uint64_t bytes_received = 0;
  std::uint64_t would_blocks = 0;
  std::uint64_t send_errors = 0;
  std::uint64_t reconnects = 0;
  std::uint64_t connections_accepted = 0;
  std::uint64_t bad_streams = 0;          // incoming connections closed for a malformed or misaddressed frame
  std::uint64_t closed_by_peer = 0;       // incoming connections that ended between frames
  std::uint64_t truncated_frames = 0;     // incoming connections that ended in the middle of a frame
  std::uint64_t receive_pool_waits = 0;   // times receiving waited for receive blocks
  std::uint64_t delivery_waits = 0;       // times receiving paused because an application's queue was full
  std::uint64_t incoming_connections = 0; // open now

  void add_outgoing(const ConnectionCounters& c) noexcept {
    frames_sent += c.frames.load(std::memory_order_relaxed);
    bytes_sent += c.bytes.load(std::memory_order_relaxed);
    would_blocks += c.would_blocks.load(std::memory_order_relaxed);
    send_errors += c.errors.load(std::memory_order_relaxed);
    reconnects += c.reconnects.load(std::memory_order_relaxed);
  }
  void add_incoming(const ConnectionCounters& c) noexcept {
    frames_received += c.frames.load(std::memory_order_relaxed);
    bytes_received += c.bytes.load(std::memory_order_relaxed);
  }
};

inline void report_totals(MetricSink& sink, const TransportTotals& t) {
  auto d = [](std::uint64_t v) { return static_cast<double>(v); };
  sink.counter("frames_sent", d(t.frames_sent), "frames sent whole");
  sink.counter("bytes_sent", d(t.bytes_sent), "bytes of frames sent");
  sink.counter("frames_received", d(t.frames_received), "frames received and accepted by the executive");
  sink.counter("bytes_received", d(t.bytes_received), "bytes of frames received");
  sink.counter("would_blocks", d(t.would_blocks), "posts refused because a connection's queue was full");
  sink.counter("send_errors", d(t.send_errors), "connection failures and frames lost with them");
  sink.counter("reconnects", d(t.reconnects), "outgoing connections re-established");
  sink.counter("connections_accepted", d(t.connections_accepted), "incoming connections accepted");
  sink.counter("bad_streams", d(t.bad_streams), "incoming connections closed for a malformed or misaddressed frame");
  sink.counter("connections_closed_by_peer", d(t.closed_by_peer), "incoming connections the peer closed between frames");
  sink.counter("truncated_frames", d(t.truncated_frames), "incoming connections that ended in the middle of a frame");
  sink.counter("receive_pool_waits", d(t.receive_pool_waits), "times receiving waited for receive blocks");
  sink.counter("delivery_waits", d(t.delivery_waits), "times receiving paused because an application's queue was full");
  sink.gauge("incoming_connections", d(t.incoming_connections), "incoming connections open");
}

}  // namespace daqx
