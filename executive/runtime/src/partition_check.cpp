// The second round of partition checks: once a context's modules are loaded, its classes, protocols and
// properties are checked against what the modules declare.
#include "daqx/executive/partition.hpp"

#include "daqx/services/text.hpp"

#include <algorithm>
#include <initializer_list>
#include <unordered_map>
#include <utility>

namespace daqx::config {
namespace {

using strings::concatenate;
using strings::quoted;


std::string joined(const std::vector<std::string>& names) {
  std::string text;
  for (const std::string& name : names) text += concatenate({text.empty() ? "" : ", ", name});
  return text;
}


// " (loaded modules provide: a, b)", or nothing when the catalogue cannot list what it knows.
std::string alternatives(std::vector<std::string> names) {
  if (names.empty()) return {};
  std::sort(names.begin(), names.end());
  return concatenate({" (loaded modules provide: ", joined(names), ")"});
}

const ParamSpec* find_spec(const std::vector<ParamSpec>& specs, std::string_view name) {
  const auto spec = std::find_if(specs.begin(), specs.end(), [&](const ParamSpec& candidate) { return candidate.name == name; });
  return spec == specs.end() ? nullptr : &*spec;
}

struct Finding {
  SourceLocation where;
  std::string reason;
};

class CatalogueCheck {
 public:
  CatalogueCheck(const Partition& partition, const ContextConfig& context, const Catalogue& catalogue)
      : partition_(partition), context_(context), catalogue_(catalogue) {}

  std::vector<std::string> run() {
    for (const EndpointConfig& endpoint : context_.endpoints) check_endpoint(endpoint);
    for (const ApplicationConfig& application : context_.applications) check_application(application);
    // Endpoints and applications may be interleaved in the file; messages go in file order.
    std::stable_sort(findings_.begin(), findings_.end(),
                     [](const Finding& a, const Finding& b) { return a.where.line < b.where.line; });
    std::vector<std::string> messages;
    messages.reserve(findings_.size());
    // One line of UTF-8 each, whatever the partition held (ConfigError does the same for the first round).
    for (const Finding& finding : findings_)
      messages.push_back(strings::printable(concatenate({finding.where.text(), ": ", finding.reason})));
    return messages;
  }

 private:
  void report(const SourceLocation& where, std::initializer_list<std::string_view> reason) {
    findings_.push_back({where, concatenate(reason)});
  }

  void check_endpoint(const EndpointConfig& endpoint) {
    const std::vector<ParamSpec>* specs = catalogue_.transport_params(endpoint.protocol);
    if (specs == nullptr) {
      report(endpoint.where,
             {"unknown endpoint protocol ", quoted(endpoint.protocol), alternatives(catalogue_.transport_protocols())});
      return;
    }
    check_properties(endpoint.properties, *specs, concatenate({"protocol ", endpoint.protocol}), nullptr,
                     endpoint.where);
  }

  void check_application(const ApplicationConfig& application) {
    const std::vector<ParamSpec>* specs = catalogue_.application_params(application.class_name);
    if (specs == nullptr) {
      report(application.where, {"unknown application class ", quoted(application.class_name),
                                 alternatives(catalogue_.application_classes())});
      return;
    }
    check_properties(application.properties, *specs, concatenate({"application class ", application.class_name}),
                     &application, application.where);
  }

  // `owner` names the declaring class or protocol in messages; `source` is the application the properties
  // belong to (null for a transport), whose selected peers must be reachable from it. Once every value is valid on
  // its own, the checks the class declares (ParamSpec::check) see them all together, as configure will.
  void check_properties(const std::vector<Property>& properties, const std::vector<ParamSpec>& specs,
                        const std::string& owner, const ApplicationConfig* source, const SourceLocation& where) {
    const std::size_t findings_before = findings_.size();
    for (const Property& property : properties) {
      const ParamSpec* spec = find_spec(specs, property.name);
      if (spec == nullptr) {
        std::vector<std::string> declared;
        for (const ParamSpec& candidate : specs) declared.push_back(candidate.name);
        report(property.where, {"unknown property ", quoted(property.name), " for ", owner,
                                declared.empty() ? " (it declares none)" : " (it declares: ", joined(declared),
                                declared.empty() ? "" : ")"});
        continue;
      }
      if (property.type && *property.type != spec->type) {
        report(property.where, {"property ", quoted(property.name), " is stated as ", to_string(*property.type), " but ",
                                owner, " declares it as ", to_string(spec->type)});
        continue;
      }
      const std::string reason = validate_param(*spec, property.value);
      if (!reason.empty()) {
        report(property.where, {"property ", quoted(property.name), " of ", owner, ": ", reason});
        continue;
      }
      if (spec->type == ParamType::applications) check_selection(property, source, owner);
    }
    if (findings_.size() != findings_before) return;
    ParamSet values(specs);
    if (const std::string reason = values.set_together(assignments(properties)); !reason.empty()) {
      const std::string subject =
          source != nullptr ? concatenate({"application ", std::to_string(source->id), " (", owner, ")"}) : owner;
      report(where, {subject, ": ", reason});
    }
  }

  void check_selection(const Property& property, const ApplicationConfig* source, const std::string& owner) {
    const std::string subject = source != nullptr ? concatenate({"application ", std::to_string(source->id)}) : owner;
    std::string error;
    const std::vector<std::uint32_t> selected = resolve_selector(partition_, property.value, error);
    if (!error.empty()) {
      report(property.where, {subject, " parameter ", quoted(property.name), ": ", error});
      return;
    }
    if (source == nullptr) return;
    const auto& placed = placements();
    for (std::uint32_t tid : selected) {
      const auto target = placed.find(tid);  // resolve_selector selects only applications of the partition
      if (target == placed.end() || shares_network(context_, *source, *target->second.first, *target->second.second))
        continue;
      report(property.where, {subject, " parameter ", quoted(property.name), " selects application ", std::to_string(tid),
                              " in context ", target->second.first->url, ", with which it shares no network"});
    }
  }

  // Every application with its context, made at the first selection checked: a selector picks up to every
  // application of the partition, which must not mean a search of the partition for each.
  const std::unordered_map<std::uint32_t, std::pair<const ContextConfig*, const ApplicationConfig*>>& placements() {
    if (placements_.empty())
      for (const ContextConfig& context : partition_.contexts)
        for (const ApplicationConfig& application : context.applications)
          placements_.emplace(application.id, std::pair{&context, &application});
    return placements_;
  }

  const Partition& partition_;
  const ContextConfig& context_;
  const Catalogue& catalogue_;
  std::vector<Finding> findings_;
  std::unordered_map<std::uint32_t, std::pair<const ContextConfig*, const ApplicationConfig*>> placements_;
};

}  // namespace

std::vector<std::string> check_against_catalogue(const Partition& partition, const ContextConfig& context,
                                                 const Catalogue& catalogue) {
  return CatalogueCheck(partition, context, catalogue).run();
}

}  // namespace daqx::config
