// The EvM's allowance of lost units, from the partition's <Launch><Expendable> rule for their class.
#include "evm/unit_loss_allowance.hpp"

#include <algorithm>
#include <stdexcept>

#include "daqx/apps/text.hpp"

namespace daqx::evb::evm {
using apps::concatenate;
using apps::to_text;

std::optional<std::string> UnitLossAllowance::exceeded(std::size_t lost) const {
  if (!allowed_ || lost <= *allowed_) return std::nullopt;
  return concatenate({to_text(std::uint64_t{lost}), " ", class_name_, " lost, ", to_text(std::uint64_t{*allowed_}),
                      " allowed by the partition's <Expendable>"});
}

UnitLossAllowance read_unit_loss_allowance(const ApplicationContext& context, const std::vector<Tid>& tids,
                                           const std::string& parameter) {
  std::vector<Tid> sorted = tids;
  std::sort(sorted.begin(), sorted.end());
  std::vector<std::string> classes;
  for (const ApplicationInfo& application : context.applications())
    if (std::binary_search(sorted.begin(), sorted.end(), application.tid) &&
        std::find(classes.begin(), classes.end(), application.class_name) == classes.end())
      classes.push_back(application.class_name);
  UnitLossAllowance allowance;
  for (const std::string& name : classes) {
    const std::optional<std::uint32_t> allowed = context.losses_allowed(name);
    if (!allowed) continue;
    if (classes.size() > 1)
      throw std::runtime_error(concatenate({parameter, ": its units are of ", to_text(std::uint64_t{classes.size()}),
                                            " classes, and the partition's <Expendable> rule for ", name,
                                            " counts the losses of one class: serve units of one class"}));
    allowance = UnitLossAllowance(name, *allowed);
  }
  return allowance;
}

}  // namespace daqx::evb::evm
