// What the EvM does when a readout unit is down (parameter ruFailurePolicy): fail the run, or have the BUs
// build the events without it, flagged incomplete; and when an RU counts as down for its silence.
#pragma once

#include <optional>
#include <string>

#include "common/dispatch.hpp"
#include "evm/ru_proxy.hpp"

namespace daqx::evb::evm {

enum class RuFailurePolicy { fail, incomplete };

// "fail" or "incomplete"; anything else throws, naming the parameter.
RuFailurePolicy parse_ru_failure_policy(const std::string& text);

// Why an RU counts as down for its silence: taking part and silent longer than ruTimeout, or never heard
// since the run started, beyond ruTimeout and a grace for slow starts (it holds up every assignment). Or nothing.
std::optional<std::string> ru_silence(const RuProxy& ru, Clock::time_point now, Clock::time_point run_start,
                                      double ru_timeout);

// An RU found down: the reason said to everyone, and whether the run fails (policy fail) or goes on building
// incomplete events (policy incomplete; then the log line says so).
struct RuDownVerdict {
  std::string reason;
  bool fail_run;
  std::string log_line;  // when the run goes on
};
RuDownVerdict ru_down_verdict(RuFailurePolicy policy, const RuProxy& ru, const std::string& why);

}  // namespace daqx::evb::evm
