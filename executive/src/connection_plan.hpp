// Which contexts of a partition connect to which: a context opens a connection to another only where one of its
// applications sends to an application there (a parameter of type applications with PeerUse::sends_to, at its
// written or default selector), over the network both applications are on. The executive names those
// connections at configure (and its connect command opens them); a frame to anyone else opens its connection at
// first use. An application whose class is not known here (its module is not loadable on this host) may send
// anywhere: its context is planned to connect to every context on its network.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "daqx/api/parameters.hpp"
#include "daqx/executive/partition.hpp"

namespace daqx::detail {

struct PlannedConnection {
  std::size_t from = 0;  // indexes into partition.contexts
  std::size_t to = 0;
  std::string network;
};

class ConnectionPlan {
 public:
  // The declared parameters of an application class as a context sees them; nullptr when not known.
  using ClassParams = std::function<const std::vector<ParamSpec>*(const config::ContextConfig&, std::string_view)>;
  ConnectionPlan() = default;
  ConnectionPlan(const config::Partition& partition, const ClassParams& class_params);

  // Every planned connection, by sending context then receiving context.
  const std::vector<PlannedConnection>& connections() const noexcept { return connections_; }
  // Whether `from` connects to `to` on `network`.
  bool connects(std::size_t from, std::size_t to, std::string_view network) const noexcept;
  std::size_t outgoing(std::size_t context) const noexcept { return outgoing_[context]; }
  // Connections that arrive at `context`'s endpoint on `network`.
  std::size_t incoming(std::size_t context, std::string_view network) const noexcept;
  std::size_t incoming(std::size_t context) const noexcept { return incoming_total_[context]; }

 private:
  std::vector<PlannedConnection> connections_;  // sorted (from, to, network), no duplicates
  std::vector<std::size_t> outgoing_;
  std::vector<std::size_t> incoming_total_;
};

// "context http://ru-3:9000: 65 outgoing connections (to 64 contexts on network data, ...), 1 incoming; about 80
// file descriptors" for each context, or the one named; for daqx-executive --check.
std::vector<std::string> describe_plan(const config::Partition& partition, const ConnectionPlan& plan,
                                       const std::string& context_url);

// The file descriptors a context with this many connections needs, roughly: one per connection (a socket, an
// endpoint, a connection manager id) and a margin for the control server, modules, pools and logs.
std::size_t descriptors_needed(std::size_t connections) noexcept;

}  // namespace daqx::detail
