// The launcher's allowance of lost contexts, from the partition's <Launch><Expendable> rules.
#include "expendable_allowance.hpp"

namespace daqx::launch {

ExpendableAllowance::Verdict ExpendableAllowance::lose(const config::ContextConfig& context, const std::string& why) {
  if (rules_.expendables.empty()) return {};
  // The losses this context would bring, per class, and the first reason the allowance does not cover them.
  std::map<std::string, std::uint32_t> adding;
  std::string units;
  for (const config::ApplicationConfig& application : context.applications) {
    ++adding[application.class_name];
    units.append(units.empty() ? "" : ", ").append(application.class_name).append(" ").append(std::to_string(application.id));
  }
  std::string refused = adding.empty() ? "it holds no application of a class the partition lets be lost" : "";
  std::string counts;
  for (const auto& [class_name, count] : adding) {
    const config::LaunchExpendableRule* rule = rules_.expendable_rule(class_name);
    if (rule == nullptr) {
      refused = "its " + class_name + " may not be lost (no <Expendable> rule for " + class_name + ")";
      break;
    }
    const std::uint32_t lost = lost_per_class_[class_name] + count;
    const std::string tally = std::to_string(lost) + " " + class_name + " lost, " + std::to_string(rule->losses_allowed) + " allowed";
    if (lost > rule->losses_allowed) {
      refused = tally + " by the partition's <Expendable> at " + rule->where.text();
      break;
    }
    counts.append(counts.empty() ? "" : ", ").append(tally);
  }
  if (!refused.empty()) return {false, refused};
  for (const auto& [class_name, count] : adding) lost_per_class_[class_name] += count;
  lost_contexts_[context.url] = why;
  const std::string line = "lost: " + units + " (context " + context.url + ", " + why + ")";
  lost_lines_.push_back(line);
  return {true, counts + ": the run goes on"};
}

const std::string* ExpendableAllowance::lost_because(const std::string& url) const {
  const auto found = lost_contexts_.find(url);
  return found == lost_contexts_.end() ? nullptr : &found->second;
}

}  // namespace daqx::launch
