// The executive's offline tools (daqx/executive/executive.hpp): what --list-params, --check, --capabilities and
// the resource plan answer from a partition and its modules, without making anything.
#include "daqx/executive/executive.hpp"

#include <algorithm>
#include <filesystem>
#include <set>
#include <stdexcept>

#include "connection_plan.hpp"
#include "daqx/services/text.hpp"
#include "module_loader.hpp"
#include "resource_plan_estimate.hpp"
#include "threads.hpp"

namespace daqx {

ModuleListing Executive::list_modules(const std::vector<std::string>& modules, std::vector<std::string>* not_loaded) {
  detail::ModuleRegistry registry;
  for (const std::string& module : modules) {
    const std::string error = registry.load(module, ".");
    if (!error.empty()) throw std::runtime_error(error);
  }
  if (modules.empty()) {
    std::set<std::string> names;
    for (const std::string& directory : detail::ModuleRegistry::search_path()) {
      std::error_code error;
      std::vector<std::filesystem::path> files;
      for (const auto& entry : std::filesystem::directory_iterator(directory, error))
        if (entry.path().extension() == ".so") files.push_back(entry.path());
      std::sort(files.begin(), files.end());
      for (const std::filesystem::path& file : files) {
        if (!names.insert(file.filename().string()).second) continue;  // shadowed, as a bare name would be
        const std::string reason = registry.load(file.string(), ".");
        if (!reason.empty() && not_loaded != nullptr) not_loaded->push_back(reason);
      }
    }
  }
  ModuleListing listing;
  for (std::size_t m = 0; m < registry.modules().size(); ++m)
    listing.modules.push_back(ModuleListing::Module{registry.paths()[m], registry.modules()[m]});
  listing.application_params = detail::executive_application_params();
  return listing;
}

std::vector<std::string> Executive::check(const config::Partition& partition, const std::string& context_url) {
  std::vector<std::string> problems;
  const std::string partition_dir = std::filesystem::path(partition.file).parent_path().string();
  const auto where = [](const config::SourceLocation& at) { return at.text() + ": "; };
  bool found = false;
  for (const config::ContextConfig& context : partition.contexts) {
    if (!context_url.empty() && partition.find_context(context_url) != &context) continue;
    found = true;
    // Only for a context named on the command line: that says this host runs it, and another host may have
    // other CPUs and nodes.
    if (!context_url.empty())
      for (std::string& problem : detail::check_policy_on_this_machine(partition, context.url))
        problems.push_back(std::move(problem));
    detail::ModuleRegistry registry;
    bool loaded = true;
    for (const config::ModuleConfig& module : context.modules) {
      const std::string error = registry.load(module.path, partition_dir);
      if (!error.empty()) {
        problems.push_back(where(module.where) + error);
        loaded = false;
      }
    }
    if (!loaded) continue;  // every class of a missing module would be reported as unknown
    for (std::string& problem : config::check_against_catalogue(partition, context, registry))
      problems.push_back(std::move(problem));
    // Selectors left at their defaults are resolved when applications are made; a default that selects
    // nothing that exists is as much a mistake as a written one.
    for (const config::ApplicationConfig& application : context.applications) {
      const ApplicationClass* cls = registry.application_class(application.class_name);
      if (cls == nullptr) continue;  // reported above
      for (const ParamSpec& spec : cls->params) {
        if (spec.type != ParamType::applications) continue;
        const bool written = std::any_of(application.properties.begin(), application.properties.end(),
                                         [&](const config::Property& p) { return p.name == spec.name; });
        if (written) continue;  // checked with the properties
        std::string error;
        config::resolve_selector(partition, spec.default_value, error);
        if (!error.empty())
          problems.push_back(where(application.where) + "application " + std::to_string(application.id) +
                             " parameter '" + spec.name + "' (default '" + spec.default_value + "'): " + error);
      }
    }
  }
  if (!found) {
    std::string known;
    for (const auto& c : partition.contexts) known += (known.empty() ? "" : ", ") + c.url;
    problems.push_back(partition.file + ": context " + context_url + " is not in this partition (it has: " + known +
                       ")");
  }
  return problems;
}

namespace {

// Every context's modules, each path once; one that does not load here plans widely (and its needs go uncounted).
void load_every_module(const config::Partition& partition, detail::ModuleRegistry& registry) {
  std::set<std::string> loaded;
  const std::string partition_dir = std::filesystem::path(partition.file).parent_path().string();
  for (const config::ContextConfig& context : partition.contexts)
    for (const config::ModuleConfig& module : context.modules)
      if (loaded.insert(module.path).second) registry.load(module.path, partition_dir);
}

}  // namespace

std::vector<std::string> Executive::connection_plan(const config::Partition& partition,
                                                   const std::string& context_url) {
  detail::ModuleRegistry registry;
  load_every_module(partition, registry);
  const detail::ConnectionPlan plan(partition, [&](const config::ContextConfig&, std::string_view class_name) {
    return registry.application_params(class_name);
  });
  return detail::describe_plan(partition, plan, context_url);
}

std::vector<ContextNeeds> Executive::plan_resources(const config::Partition& partition) {
  detail::ModuleRegistry registry;
  load_every_module(partition, registry);
  const detail::ConnectionPlan plan(partition, [&](const config::ContextConfig&, std::string_view class_name) {
    return registry.application_params(class_name);
  });
  return detail::estimate_needs(partition, plan, registry);
}

std::vector<std::pair<std::string, TransportCapabilities>> Executive::transport_capabilities(
    const std::string& module, const std::vector<std::string>& assignments) {
  detail::ModuleRegistry registry;
  std::string error = registry.load(module, ".");
  if (!error.empty()) throw std::runtime_error(error);
  const ModuleDescriptor& d = *registry.modules().front();
  if (d.transports.empty()) throw std::runtime_error("module " + d.name + " provides no transport");
  std::vector<std::pair<std::string, TransportCapabilities>> described;
  for (const TransportClass& t : d.transports) {
    ParamSet params(t.params);
    std::vector<std::pair<std::string, std::string>> values;
    for (const std::string& assignment : assignments) {
      const std::size_t equals = assignment.find('=');
      if (equals == std::string::npos) throw std::runtime_error(strings::quoted(assignment) + ": expected NAME=VALUE");
      values.emplace_back(assignment.substr(0, equals), assignment.substr(equals + 1));
    }
    // Together, as a partition's properties are: the checks see them all, in any order.
    if (const std::string refused = params.set_together(values); !refused.empty())
      throw std::runtime_error("transport " + t.protocol + ": " + refused);
    if (!t.capabilities) throw std::runtime_error("transport " + t.protocol + " declares no capabilities");
    described.emplace_back(t.protocol, t.capabilities(params));
  }
  return described;
}

}  // namespace daqx
