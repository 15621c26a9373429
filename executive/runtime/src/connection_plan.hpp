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
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "daqx/api/parameters.hpp"
#include "daqx/executive/partition.hpp"

namespace daqx::detail {

// Counts for every context and the targets of one: memory in the number of contexts, not of connections (a
// partition of thousands of contexts plans millions of them, and every executive makes the plan).
class ConnectionPlan {
 public:
  // The declared parameters of an application class as a context sees them; nullptr when not known.
  using ClassParams = std::function<const std::vector<ParamSpec>*(const config::ContextConfig&, std::string_view)>;
  ConnectionPlan() = default;
  // `targets_of`: the context (index into partition.contexts) whose connections connects() answers for.
  ConnectionPlan(const config::Partition& partition, const ClassParams& class_params,
                 std::optional<std::size_t> targets_of = std::nullopt);
  // The plan of one context: its targets, its outgoing and its incoming counts (every other context's are 0, and
  // total() counts this context's connections). Linear in the partition, where the whole plan lists every
  // sender's targets (quadratic in an event builder): what each executive of a large partition makes at start.
  static ConnectionPlan of_context(const config::Partition& partition, const ClassParams& class_params,
                                   std::size_t context);

  std::size_t total() const noexcept { return total_; }
  // Whether the context `targets_of` connects to `to` on `network`.
  bool connects(std::size_t to, std::string_view network) const;
  std::size_t outgoing(std::size_t context) const noexcept { return outgoing_[context].total; }
  // A context's outgoing connections per network.
  const std::map<std::string, std::size_t, std::less<>>& outgoing_by_network(std::size_t context) const noexcept {
    return outgoing_[context].by_network;
  }
  std::size_t incoming(std::size_t context) const noexcept { return incoming_[context].total; }
  // Connections that arrive at `context`'s endpoint on `network`.
  std::size_t incoming(std::size_t context, std::string_view network) const;

 private:
  struct Count {
    std::size_t total = 0;
    std::map<std::string, std::size_t, std::less<>> by_network;
  };
  struct Placements;
  using Targets = std::set<std::pair<std::size_t, std::string_view>>;  // (receiving context, network)
  // The contexts `from` connects to, and on which network, each once.
  static void plan_targets(const config::Partition& partition, const ClassParams& class_params,
                           const Placements& placements, std::size_t from, Targets& planned);
  void count(std::size_t from, std::size_t to, std::string_view network);
  std::size_t total_ = 0;
  std::vector<Count> outgoing_;
  std::vector<Count> incoming_;
  std::set<std::pair<std::size_t, std::string>> targets_;  // of the context targets_of
};

// "context http://ru-3:9000: 65 outgoing connections (to 64 contexts on network data, ...), 1 incoming; about 80
// file descriptors" for each context, or the one named; for daqx-executive --check.
std::vector<std::string> describe_plan(const config::Partition& partition, const ConnectionPlan& plan,
                                       const std::string& context_url);

// File descriptors an executive keeps besides its connections: the control server and its clients, modules,
// shared-memory pools, logs, the epoll and event descriptors of transports and threads.
inline constexpr std::size_t kExecutiveDescriptors = 256;

// The file descriptors a context with this many connections needs, roughly: one per connection (a socket, an
// endpoint, a connection manager id) and kExecutiveDescriptors.
std::size_t descriptors_needed(std::size_t connections) noexcept;

}  // namespace daqx::detail
