// The partition's connection plan: who sends to whom, from the applications' declared parameters.
#include "connection_plan.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <unordered_map>
#include <unordered_set>

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

// Where each application lives, so that a selector's TIDs find their context without a scan.
struct ConnectionPlan::Placements {
  struct Placement {
    std::size_t context;
    const config::ApplicationConfig* application;
  };
  std::unordered_map<std::uint32_t, Placement> of;
  explicit Placements(const config::Partition& partition) {
    for (std::size_t c = 0; c < partition.contexts.size(); ++c)
      for (const config::ApplicationConfig& application : partition.contexts[c].applications)
        of.emplace(application.id, Placement{c, &application});
  }
};

void ConnectionPlan::plan_targets(const config::Partition& partition, const ClassParams& class_params,
                                  const Placements& placements, std::size_t from, Targets& planned) {
  const auto plan = [&](std::uint32_t target, std::string_view network) {
    auto found = placements.of.find(target);
    if (found == placements.of.end() || found->second.context == from) return;  // unknown, or local: no connection
    if (found->second.application->network != network) return;  // a send across networks is refused anyway
    if (!has_endpoint_on(partition.contexts[found->second.context], network)) return;
    planned.emplace(found->second.context, network);
  };
  const config::ContextConfig& context = partition.contexts[from];
  for (const config::ApplicationConfig& application : context.applications) {
    if (application.network.empty() || !has_endpoint_on(context, application.network)) continue;
    const std::vector<ParamSpec>* specs = class_params(context, application.class_name);
    if (specs == nullptr) {  // it may send to anyone on its network
      for (const auto& [tid, where] : placements.of) plan(tid, application.network);
      continue;
    }
    for (const ParamSpec& spec : *specs) {
      if (spec.type != ParamType::applications || spec.peers != PeerUse::sends_to) continue;
      std::string error;  // a selector that selects nothing is the partition check's to report
      for (std::uint32_t target : config::resolve_selector(partition, selector_of(application, spec), error))
        plan(target, application.network);
    }
  }
}

void ConnectionPlan::count(std::size_t from, std::size_t to, std::string_view network) {
  ++total_;
  ++outgoing_[from].total;
  ++incoming_[to].total;
  const auto add = [](Count& of, std::string_view name) {
    auto at = of.by_network.find(name);
    if (at == of.by_network.end()) at = of.by_network.emplace(std::string(name), 0).first;
    ++at->second;
  };
  add(outgoing_[from], network);
  add(incoming_[to], network);
}

ConnectionPlan::ConnectionPlan(const config::Partition& partition, const ClassParams& class_params,
                               std::optional<std::size_t> targets_of)
    : outgoing_(partition.contexts.size()), incoming_(partition.contexts.size()) {
  const Placements placements(partition);
  // One sending context at a time: its targets (receiving context, network) once each, then only counted.
  Targets planned;
  for (std::size_t from = 0; from < partition.contexts.size(); ++from) {
    planned.clear();
    plan_targets(partition, class_params, placements, from, planned);
    for (const auto& [to, network] : planned) {
      count(from, to, network);
      if (targets_of == from) targets_.emplace(to, std::string(network));
    }
  }
}

ConnectionPlan ConnectionPlan::of_context(const config::Partition& partition, const ClassParams& class_params,
                                          std::size_t context) {
  ConnectionPlan plan;
  plan.outgoing_.resize(partition.contexts.size());
  plan.incoming_.resize(partition.contexts.size());
  const Placements placements(partition);
  Targets planned;
  plan_targets(partition, class_params, placements, context, planned);
  for (const auto& [to, network] : planned) {
    plan.count(context, to, network);
    plan.targets_.emplace(to, std::string(network));
  }

  // Incoming: each other context once per network on which one of its applications sends to one here. Whether a
  // selector picks an application here is asked of the set it selects, made once per distinct selector text
  // (partitions repeat a few: every RU's default bus), so this stays linear in the partition.
  const config::ContextConfig& here = partition.contexts[context];
  std::unordered_map<std::string_view, std::unordered_set<std::uint32_t>> selections;
  const auto picks = [&](std::string_view selector, std::uint32_t tid) {
    auto [selection, fresh] = selections.try_emplace(selector);
    if (fresh) {
      std::string error;  // as in plan_targets: a selector that selects nothing plans nothing
      for (std::uint32_t selected : config::resolve_selector(partition, selector, error)) selection->second.insert(selected);
    }
    return selection->second.count(tid) != 0;
  };
  const auto receives_here = [&](std::string_view network, const auto& picked) {
    if (!has_endpoint_on(here, network)) return false;
    return std::any_of(here.applications.begin(), here.applications.end(), [&](const config::ApplicationConfig& a) {
      return a.network == network && picked(a.id);
    });
  };
  std::set<std::string_view> networks;  // on which the context `from` connects here
  for (std::size_t from = 0; from < partition.contexts.size(); ++from) {
    if (from == context) continue;
    const config::ContextConfig& sender = partition.contexts[from];
    networks.clear();
    for (const config::ApplicationConfig& application : sender.applications) {
      const std::string& network = application.network;
      if (network.empty() || !has_endpoint_on(sender, network)) continue;
      const std::vector<ParamSpec>* specs = class_params(sender, application.class_name);
      if (specs == nullptr) {  // it may send to anyone on its network
        if (receives_here(network, [](std::uint32_t) { return true; })) networks.insert(network);
        continue;
      }
      for (const ParamSpec& spec : *specs) {
        if (spec.type != ParamType::applications || spec.peers != PeerUse::sends_to) continue;
        const std::string& selector = selector_of(application, spec);
        if (receives_here(network, [&](std::uint32_t tid) { return picks(selector, tid); })) networks.insert(network);
      }
    }
    for (std::string_view network : networks) plan.count(from, context, network);
  }
  return plan;
}

bool ConnectionPlan::connects(std::size_t to, std::string_view network) const {
  return targets_.count(std::make_pair(to, std::string(network))) != 0;
}

std::size_t ConnectionPlan::incoming(std::size_t context, std::string_view network) const {
  const auto& by_network = incoming_[context].by_network;
  auto at = by_network.find(network);
  return at == by_network.end() ? 0 : at->second;
}

std::size_t descriptors_needed(std::size_t connections) noexcept { return connections + kExecutiveDescriptors; }

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
