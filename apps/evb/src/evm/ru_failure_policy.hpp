// What the EvM does when a readout unit is down (parameter ruFailurePolicy): fail the run, or have the BUs
// build the events without it, flagged incomplete.
#pragma once

#include <string>

namespace daqx::evb {

enum class RuFailurePolicy { fail, incomplete };

// "fail" or "incomplete"; anything else throws, naming the parameter.
RuFailurePolicy parse_ru_failure_policy(const std::string& text);

}  // namespace daqx::evb
