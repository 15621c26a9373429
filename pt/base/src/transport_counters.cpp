// The transports' counters as metrics, one set of names for all.
#include "daqx/pt/transport_counters.hpp"

namespace daqx::pt {
namespace {

double value(const std::atomic<std::uint64_t>& counter) {
  return static_cast<double>(counter.load(std::memory_order_relaxed));
}

std::uint64_t load(const std::atomic<std::uint64_t>& counter) { return counter.load(std::memory_order_relaxed); }

}  // namespace

void add_outgoing_metrics(std::vector<Metric>& metrics, const ConnectionCounters& c) {
  metrics.push_back({"frames_sent", Metric::Kind::counter, value(c.frames), "frames sent", {}});
  metrics.push_back({"bytes_sent", Metric::Kind::counter, value(c.bytes), "bytes sent", {}});
  metrics.push_back({"sends_would_block", Metric::Kind::counter, value(c.would_blocks), "posts refused: queue full", {}});
  metrics.push_back({"errors", Metric::Kind::counter, value(c.errors), "failures and frames lost with them", {}});
  metrics.push_back({"reconnects", Metric::Kind::counter, value(c.reconnects), "times re-established", {}});
  metrics.push_back({"credit_waits", Metric::Kind::counter, value(c.credit_waits), "stalls for credits", {}});
  metrics.push_back({"messages_sent", Metric::Kind::counter, value(c.messages), "messages or writes", {}});
}

void add_incoming_metrics(std::vector<Metric>& metrics, const ConnectionCounters& c) {
  metrics.push_back({"frames_received", Metric::Kind::counter, value(c.frames), "frames received", {}});
  metrics.push_back({"bytes_received", Metric::Kind::counter, value(c.bytes), "bytes received", {}});
  metrics.push_back({"receive_buffers", Metric::Kind::gauge, value(c.receive_buffers),
                     "receive buffers it holds (posted, or with messages not yet taken)", {}});
  metrics.push_back({"starved", Metric::Kind::gauge, value(c.starved),
                     "1 while its sender has no credit and the receive pool no buffer for it", {}});
  metrics.push_back({"starvations", Metric::Kind::counter, value(c.starvations), "times it was left without a buffer", {}});
}

void TransportTotals::add_outgoing(const ConnectionCounters& c) noexcept {
  frames_sent += load(c.frames);
  bytes_sent += load(c.bytes);
  would_blocks += load(c.would_blocks);
  send_errors += load(c.errors);
  reconnects += load(c.reconnects);
  credit_waits += load(c.credit_waits);
  messages_sent += load(c.messages);
}

void TransportTotals::add_incoming(const ConnectionCounters& c) noexcept {
  frames_received += load(c.frames);
  bytes_received += load(c.bytes);
}

void report_totals(MetricSink& sink, const TransportTotals& t, const TransportEvents& e) {
  auto d = [](std::uint64_t v) { return static_cast<double>(v); };
  sink.counter("frames_sent", d(t.frames_sent), "frames sent whole");
  sink.counter("bytes_sent", d(t.bytes_sent), "bytes of frames sent");
  sink.counter("frames_received", d(t.frames_received), "frames received and accepted by the executive");
  sink.counter("bytes_received", d(t.bytes_received), "bytes of frames received");
  sink.counter("sends_would_block", d(t.would_blocks), "posts refused because a connection's queue was full");
  sink.counter("send_errors", d(t.send_errors), "connection failures and frames lost with them");
  sink.counter("reconnects", d(t.reconnects), "outgoing connections re-established");
  sink.counter("credit_waits", d(t.credit_waits), "times a connection had frames to send and no credits");
  sink.counter("messages_sent", d(t.messages_sent),
               "messages (or writes) the frames went out in: fewer than frames_sent when frames were packed");
  sink.counter("connections_accepted", value(e.connections_accepted), "incoming connections accepted");
  sink.counter("connection_requests_refused", value(e.requests_refused), "connection requests refused or failed");
  sink.counter("bad_streams", value(e.bad_streams), "incoming connections closed for a malformed or misaddressed frame");
  sink.counter("connections_closed_by_peer", value(e.closed_by_peer), "incoming connections the peer closed between frames");
  sink.counter("truncated_frames", value(e.truncated_frames), "incoming connections that ended in the middle of a frame");
  sink.counter("receive_pool_waits", value(e.receive_pool_waits), "times receiving waited for receive blocks");
  sink.counter("delivery_waits", value(e.delivery_waits), "times receiving paused because an application's queue was full");
  sink.counter("completion_errors", value(e.completion_errors), "operations the network completed with an error");
  sink.counter("connections_over_limit", value(e.over_limit),
               "incoming connections refused: maxIncoming, or as many as the receive budget serves, were open");
  sink.counter("receive_starvations", value(e.starvations),
               "times an incoming connection was left with no receive buffer, its sender without credit");
  sink.gauge("connections_starved", value(e.starved_now),
             "incoming connections whose sender has no credit and the receive pool no buffer for them now");
  sink.gauge("incoming_connections", d(t.incoming_connections), "incoming connections open");
}

}  // namespace daqx::pt
