// The partition's connection plan: who sends to whom, from the applications' declared parameters.
#include "connection_plan.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>
#include <unordered_map>

namespace daqx::detail {
namespace {

bool has_endpoint_on(const config::ContextConfig& context, std::string_view network) {
  return std::any_of(context.endpoints.begin(), context.endpoints.end(),
                     [&](const config::EndpointConfig& e) { return e.network == network; });
}

// The selector an application's parameter holds: the written one, else the class's default.
const std::string& selector_of(const config::ApplicationConfig& application, const ParamSpec& spec) {
  for (const config::Property& property : application.properties)
    if (property.name == spec.name) return property.value;
  return spec.default_value;
}

}  // namespace

ConnectionPlan::ConnectionPlan(const config::Partition& partition, const ClassParams& class_params)
    : outgoing_(partition.contexts.size(), 0), incoming_total_(partition.contexts.size(), 0) {
  // Where each application lives, so that a selector's TIDs find their context without a scan.
  struct Placement {
    std::size_t context;
    const config::ApplicationConfig* application;
  };
  std::unordered_map<std::uint32_t, Placement> placement;
  for (std::size_t c = 0; c < partition.contexts.size(); ++c)
    for (const config::ApplicationConfig& application : partition.contexts[c].applications)
      placement.emplace(application.id, Placement{c, &application});

  std::set<std::tuple<std::size_t, std::size_t, std::string>> planned;
  const auto plan = [&](std::size_t from, std::uint32_t target, const std::string& network) {
    auto found = placement.find(target);
    if (found == placement.end() || found->second.context == from) return;  // unknown, or local: no connection
    if (found->second.application->network != network) return;  // a send across networks is refused anyway
    if (!has_endpoint_on(partition.contexts[found->second.context], network)) return;
    planned.emplace(from, found->second.context, network);
  };
  for (std::size_t from = 0; from < partition.contexts.size(); ++from) {
    const config::ContextConfig& context = partition.contexts[from];
    for (const config::ApplicationConfig& application : context.applications) {
      if (application.network.empty() || !has_endpoint_on(context, application.network)) continue;
      const std::vector<ParamSpec>* specs = class_params(context, application.class_name);
      if (specs == nullptr) {  // it may send to anyone on its network
        for (const auto& [tid, where] : placement) plan(from, tid, application.network);
        continue;
      }
      for (const ParamSpec& spec : *specs) {
        if (spec.type != ParamType::applications || spec.peers != PeerUse::sends_to) continue;
        std::string error;  // a selector that selects nothing is the partition check's to report
        for (std::uint32_t target : config::resolve_selector(partition, selector_of(application, spec), error))
          plan(from, target, application.network);
      }
    }
  }
  connections_.reserve(planned.size());
  for (const auto& [from, to, network] : planned) {
    connections_.push_back(PlannedConnection{from, to, network});
    ++outgoing_[from];
    ++incoming_total_[to];
  }
}

bool ConnectionPlan::connects(std::size_t from, std::size_t to, std::string_view network) const noexcept {
  const auto before = [](const PlannedConnection& a, const PlannedConnection& b) {
    return std::tie(a.from, a.to, a.network) < std::tie(b.from, b.to, b.network);
  };
  const PlannedConnection probe{from, to, std::string(network)};
  return std::binary_search(connections_.begin(), connections_.end(), probe, before);
}

std::size_t ConnectionPlan::incoming(std::size_t context, std::string_view network) const noexcept {
  std::size_t count = 0;
  for (const PlannedConnection& c : connections_)
    if (c.to == context && c.network == network) ++count;
  return count;
}

std::size_t descriptors_needed(std::size_t connections) noexcept { return connections + 256; }

std::vector<std::string> describe_plan(const config::Partition& partition, const ConnectionPlan& plan,
                                       const std::string& context_url) {
  std::vector<std::string> lines;
  std::size_t most_outgoing = 0;
  std::size_t most_incoming = 0;
  for (std::size_t c = 0; c < partition.contexts.size(); ++c) {
    most_outgoing = std::max(most_outgoing, plan.outgoing(c));
    most_incoming = std::max(most_incoming, plan.incoming(c));
  }
  lines.push_back(std::to_string(plan.connections().size()) + " connections planned between " +
                  std::to_string(partition.contexts.size()) + " contexts (where applications send); a context has at most " +
                  std::to_string(most_outgoing) + " outgoing and " + std::to_string(most_incoming) + " incoming");
  // The connections are sorted by sender: each context's are one run.
  std::vector<std::vector<PlannedConnection>::const_iterator> first_from(partition.contexts.size(),
                                                                         plan.connections().end());
  for (auto at = plan.connections().begin(); at != plan.connections().end(); ++at)
    if (first_from[at->from] == plan.connections().end()) first_from[at->from] = at;
  for (std::size_t c = 0; c < partition.contexts.size(); ++c) {
    const config::ContextConfig& context = partition.contexts[c];
    if (!context_url.empty() && partition.find_context(context_url) != &context) continue;
    std::map<std::string, std::size_t> by_network;
    for (auto at = first_from[c]; at != plan.connections().end() && at->from == c; ++at) ++by_network[at->network];
    std::string line = "context " + context.url + ": " + std::to_string(plan.outgoing(c)) + " outgoing";
    if (!by_network.empty()) {
      line += " (";
      bool first = true;
      for (const auto& [network, count] : by_network) {
        line += (first ? "" : ", ") + std::to_string(count) + " on " + network;
        first = false;
      }
      line += ")";
    }
    const std::size_t connections = plan.outgoing(c) + plan.incoming(c);
    line += ", " + std::to_string(plan.incoming(c)) + " incoming; about " +
            std::to_string(descriptors_needed(connections)) + " file descriptors";
    lines.push_back(std::move(line));
  }
  return lines;
}

}  // namespace daqx::detail
