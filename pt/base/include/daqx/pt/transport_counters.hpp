// The counters every peer transport keeps, each declared once with its name and help, so that pages, the JSON API
// and /metrics read the same over every transport, a connection's row and the transport's totals use the same
// names, and a test written once checks any of them.
#pragma once

#include <vector>

#include "daqx/api/counter_set.hpp"
#include "daqx/api/counters.hpp"

namespace daqx::pt {

// One outgoing connection's counts, updated with relaxed atomics by whichever thread did the work; the
// transport's totals are their sum over its connections.
struct OutgoingCounters : CounterSet {
  Counter frames_sent{*this, "frames_sent", "frames sent whole"};
  Counter bytes_sent{*this, "bytes_sent", "bytes of frames sent"};
  Counter sends_would_block{*this, "sends_would_block", "posts refused because a connection's queue was full"};
  Counter send_errors{*this, "send_errors", "connection failures and frames lost with them"};
  Counter reconnects{*this, "reconnects", "outgoing connections re-established"};
  Counter credit_waits{*this, "credit_waits", "times a connection had frames to send and no credits"};
  Counter messages_sent{*this, "messages_sent",
                        "messages (or writes) the frames went out in: fewer than frames_sent when frames were packed"};
};

// One incoming connection's traffic; the transport's totals add those of closed connections.
struct IncomingTraffic : CounterSet {
  Counter frames_received{*this, "frames_received", "frames received and accepted by the executive"};
  Counter bytes_received{*this, "bytes_received", "bytes of frames received"};
};

// One incoming connection's receive buffers, where they are posted for the sender (credits); per connection
// only (the transport's own figures are in TransportEvents).
struct IncomingBuffers : CounterSet {
  Counter receive_buffers{*this, "receive_buffers", "receive buffers it holds (posted, or with messages not yet taken)",
                          Metric::Kind::gauge};
  Counter starved{*this, "starved", "1 while its sender has no credit and the receive pool no buffer for it",
                  Metric::Kind::gauge};
  Counter starvations{*this, "starvations", "times it was left without a buffer"};
};

// What happens to a transport as a whole rather than to one connection.
struct TransportEvents : CounterSet {
  Counter connections_accepted{*this, "connections_accepted", "incoming connections accepted"};
  Counter connection_requests_refused{*this, "connection_requests_refused", "connection requests refused or failed"};
  Counter bad_streams{*this, "bad_streams", "incoming connections closed for a malformed or misaddressed frame"};
  Counter connections_closed_by_peer{*this, "connections_closed_by_peer",
                                     "incoming connections the peer closed between frames"};
  Counter truncated_frames{*this, "truncated_frames", "incoming connections that ended in the middle of a frame"};
  Counter receive_pool_waits{*this, "receive_pool_waits", "times receiving waited for receive blocks"};
  Counter delivery_waits{*this, "delivery_waits", "times receiving paused because an application's queue was full"};
  Counter completion_errors{*this, "completion_errors", "operations the network completed with an error"};
  Counter connections_over_limit{*this, "connections_over_limit",
                                 "incoming connections refused: maxIncoming, or as many as the receive budget serves, were open"};
  Counter receive_starvations{*this, "receive_starvations",
                              "times an incoming connection was left with no receive buffer, its sender without credit"};
  Counter connections_starved{*this, "connections_starved",
                              "incoming connections whose sender has no credit and the receive pool no buffer for them now",
                              Metric::Kind::gauge};
};

// A set's values as rows of a connection table.
void add_metrics(std::vector<Metric>& metrics, const CounterSet& counters);

}  // namespace daqx::pt
