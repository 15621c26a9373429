// The partition's connection plan: who sends to whom, from the applications' declared parameters.
#include "connection_plan.hpp"

#include <algorithm>
#include <map>
#include <set>
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

ConnectionPlan::ConnectionPlan(const config::Partition& partition, const ClassParams& class_params,
                               std::optional<std::size_t> targets_of)
    : outgoing_(partition.contexts.size()), incoming_(partition.contexts.size()) {
  // Where each application lives, so that a selector's TIDs find their context without a scan.
  struct Placement {
    std::size_t context;
    const config::ApplicationConfig* application;
  };
  std::unordered_map<std::uint32_t, Placement> placement;
  for (std::size_t c = 0; c < partition.contexts.size(); ++c)
    for (const config::ApplicationConfig& application : partition.contexts[c].applications)
      placement.emplace(application.id, Placement{c, &application});

  // One sending context at a time: its targets (receiving context, network) once each, then only counted.
  std::set<std::pair<std::size_t, std::string_view>> planned;
  const auto plan = [&](std::size_t from, std::uint32_t target, std::string_view network) {
    auto found = placement.find(target);
    if (found == placement.end() || found->second.context == from) return;  // unknown, or local: no connection
    if (found->second.application->network != network) return;  // a send across networks is refused anyway
    if (!has_endpoint_on(partition.contexts[found->second.context], network)) return;
    planned.emplace(found->second.context, network);
  };
  for (std::size_t from = 0; from < partition.contexts.size(); ++from) {
    const config::ContextConfig& context = partition.contexts[from];
    planned.clear();
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
    for (const auto& [to, network] : planned) {
      ++total_;
      ++outgoing_[from].total;
      ++incoming_[to].total;
      const auto count = [](Count& of, std::string_view name) {
        auto at = of.by_network.find(name);
        if (at == of.by_network.end()) at = of.by_network.emplace(std::string(name), 0).first;
        ++at->second;
      };
      count(outgoing_[from], network);
      count(incoming_[to], network);
      if (targets_of == from) targets_.emplace(to, std::string(network));
    }
  }
}

bool ConnectionPlan::connects(std::size_t to, std::string_view network) const {
  return targets_.count(std::make_pair(to, std::string(network))) != 0;
}

std::size_t ConnectionPlan::incoming(std::size_t context, std::string_view network) const {
  const auto& by_network = incoming_[context].by_network;
  auto at = by_network.find(network);
  return at == by_network.end() ? 0 : at->second;
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
  lines.push_back(std::to_string(plan.total()) + " connections planned between " +
                  std::to_string(partition.contexts.size()) + " contexts (where applications send); a context has at most " +
                  std::to_string(most_outgoing) + " outgoing and " + std::to_string(most_incoming) + " incoming");
  const config::ContextConfig* only = context_url.empty() ? nullptr : partition.find_context(context_url);
  for (std::size_t c = 0; c < partition.contexts.size(); ++c) {
    const config::ContextConfig& context = partition.contexts[c];
    if (only != nullptr && only != &context) continue;
    const auto& by_network = plan.outgoing_by_network(c);
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
