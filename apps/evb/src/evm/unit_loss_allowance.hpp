// How many of the EvM's units of one kind (its builder units, or its readout units) the run may lose and still
// go on: the partition's <Launch><Expendable> rule for their class, the one the launcher also honours for their
// contexts. Without a rule, losing units does not by itself fail the run.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "daqx/api/application.hpp"

namespace daqx::evb::evm {

class UnitLossAllowance {
 public:
  UnitLossAllowance() = default;  // no rule
  UnitLossAllowance(std::string class_name, std::uint32_t allowed)
      : class_name_(std::move(class_name)), allowed_(allowed) {}

  bool limited() const { return allowed_.has_value(); }
  std::uint32_t allowed() const { return allowed_.value_or(0); }
  const std::string& class_name() const { return class_name_; }

  // With `lost` units out of the run, why the run fails ("3 evb::BU lost, 2 allowed by the partition's
  // <Expendable>"), or nothing within the allowance (or without a rule).
  std::optional<std::string> exceeded(std::size_t lost) const;

 private:
  std::string class_name_;
  std::optional<std::uint32_t> allowed_;
};

// The allowance for the units `tids` (the EvM's "bus" or "rus", named `parameter` in messages), as the partition
// gives it through `context`. Throws when they are of several classes, one of which has a rule: a rule counts
// the units of one class, the EvM the units it serves.
UnitLossAllowance read_unit_loss_allowance(const ApplicationContext& context, const std::vector<Tid>& tids,
                                           const std::string& parameter);

}  // namespace daqx::evb::evm
