// Questions asked of a loaded partition: where an application lives, which applications a selector picks,
// and whether two applications can reach each other.
#include "daqx/executive/partition.hpp"

#include "daqx/services/number_text.hpp"
#include "daqx/services/text.hpp"

#include <fnmatch.h>

#include <algorithm>
#include <initializer_list>
#include <set>
#include <utility>

namespace daqx::config {
namespace {

using strings::concatenate;
using strings::equals_ignoring_case;
using strings::lower;
using strings::trim;

// Each message one line of UTF-8, whatever bytes the partition held: names, values, URLs and file names are
// quoted from it all over the parser and the checks, so it is made sure of here, where every message passes.
std::vector<std::string> printable_lines(std::vector<std::string> messages) {
  for (std::string& message : messages) message = strings::printable(message);
  return messages;
}

std::string join_lines(const std::vector<std::string>& messages) {
  std::string joined;
  for (const std::string& message : messages) {
    if (!joined.empty()) joined += '\n';
    joined += message;
  }
  return joined;
}



std::optional<std::uint32_t> parse_id(std::string_view text) { return numbers::parse<std::uint32_t>(text, 1).value; }

}  // namespace

std::vector<std::pair<std::string, std::string>> assignments(const std::vector<Property>& properties) {
  std::vector<std::pair<std::string, std::string>> pairs;
  pairs.reserve(properties.size());
  for (const Property& property : properties) pairs.emplace_back(property.name, property.value);
  return pairs;
}

ConfigError::ConfigError(std::vector<std::string> messages)
    : std::runtime_error(join_lines(printable_lines(messages))), messages_(printable_lines(std::move(messages))) {}

const LaunchHostRule* LaunchConfig::host_rule(std::string_view host) const noexcept {
  const std::string name(host);
  for (const LaunchHostRule& rule : hosts)
    if (fnmatch(rule.pattern.c_str(), name.c_str(), 0) == 0) return &rule;
  return nullptr;
}

const LaunchRestartRule* LaunchConfig::restart_rule(std::string_view url) const noexcept {
  const std::string name(url);
  for (const LaunchRestartRule& rule : restarts)
    if (fnmatch(rule.pattern.c_str(), name.c_str(), 0) == 0) return &rule;
  return nullptr;
}

const LaunchExpendableRule* LaunchConfig::expendable_rule(std::string_view class_name) const noexcept {
  for (const LaunchExpendableRule& rule : expendables)
    if (rule.class_name == class_name) return &rule;
  return nullptr;
}

const ContextConfig* Partition::find_context(std::string_view url) const noexcept {
  for (const ContextConfig& context : contexts)
    if (context.url == url) return &context;
  return nullptr;
}

const ContextConfig* Partition::context_of(std::uint32_t tid) const noexcept {
  for (const ContextConfig& context : contexts)
    for (const ApplicationConfig& candidate : context.applications)
      if (candidate.id == tid) return &context;
  return nullptr;
}

const ApplicationConfig* Partition::application(std::uint32_t tid) const noexcept {
  for (const ContextConfig& context : contexts)
    for (const ApplicationConfig& candidate : context.applications)
      if (candidate.id == tid) return &candidate;
  return nullptr;
}

std::vector<std::uint32_t> resolve_selector(const Partition& partition, std::string_view selector, std::string& error) {
  error.clear();
  std::vector<std::uint32_t> selected;
  const std::string_view wanted = trim(selector);
  if (wanted.empty()) return selected;

  if (wanted == "*") {
    for (const ContextConfig& context : partition.contexts)
      for (const ApplicationConfig& candidate : context.applications) selected.push_back(candidate.id);
    return selected;
  }

  constexpr std::string_view class_prefix = "class:";
  if (wanted.substr(0, class_prefix.size()) == class_prefix) {
    const std::string_view class_name = trim(wanted.substr(class_prefix.size()));
    for (const ContextConfig& context : partition.contexts)
      for (const ApplicationConfig& candidate : context.applications)
        if (candidate.class_name == class_name) selected.push_back(candidate.id);
    if (selected.empty()) error = concatenate({"no application of class '", class_name, "' in the partition"});
    return selected;
  }

  std::vector<std::uint32_t> given;
  std::size_t start = 0;
  while (start <= wanted.size()) {
    const std::size_t comma = std::min(wanted.find(',', start), wanted.size());
    const std::string_view item = trim(wanted.substr(start, comma - start));
    start = comma + 1;
    const std::optional<std::uint32_t> id = parse_id(item);
    if (!id) {
      error = concatenate({"'", item, "' in '", wanted,
                           "' is not an application id (expected class:NAME, *, or ids such as 3,4,5)"});
      return {};
    }
    given.push_back(*id);
  }
  // One pass over the partition for all the ids (a list of every BU's id is not a scan per id), in partition
  // order like the other forms, so every executive derives the same order.
  const std::set<std::uint32_t> ids(given.begin(), given.end());
  for (const ContextConfig& context : partition.contexts)
    for (const ApplicationConfig& candidate : context.applications)
      if (ids.count(candidate.id) != 0) selected.push_back(candidate.id);
  if (selected.size() == ids.size()) return selected;
  const std::set<std::uint32_t> found(selected.begin(), selected.end());
  std::string unknown;
  for (std::uint32_t id : given)
    if (found.count(id) == 0) unknown += concatenate({unknown.empty() ? "" : ", ", std::to_string(id)});
  error = concatenate({"no application with id ", unknown, " in the partition"});
  return {};
}

bool shares_network(const Partition& partition, std::uint32_t from, std::uint32_t to) {
  const ApplicationConfig* source = partition.application(from);
  const ApplicationConfig* target = partition.application(to);
  const ContextConfig* from_context = partition.context_of(from);
  const ContextConfig* to_context = partition.context_of(to);
  if (source == nullptr || target == nullptr || from_context == nullptr || to_context == nullptr) return false;
  return shares_network(*from_context, *source, *to_context, *target);
}

bool shares_network(const ContextConfig& from_context, const ApplicationConfig& source, const ContextConfig& to_context,
                    const ApplicationConfig& target) {
  if (&from_context == &to_context) return true;  // delivered in process, no network involved
  const std::string& network = source.network;
  if (network.empty() || network != target.network) return false;
  return std::any_of(to_context.endpoints.begin(), to_context.endpoints.end(),
                     [&](const EndpointConfig& endpoint) { return endpoint.network == network; });
}

}  // namespace daqx::config
