// The EvM's policy for readout units that are down: reading ruFailurePolicy, silence, fail or incomplete.
#include "evm/ru_failure_policy.hpp"

#include <stdexcept>

#include "daqx/apps/text.hpp"
#include "common/dispatch.hpp"

namespace daqx::evb::evm {
namespace {
constexpr double kStartGrace = 10;  // s an RU may take to report after the run starts, on top of ruTimeout
}
using apps::concatenate;
using apps::to_text;

RuFailurePolicy parse_ru_failure_policy(const std::string& text) {
  if (text == "fail") return RuFailurePolicy::fail;
  if (text == "incomplete") return RuFailurePolicy::incomplete;
  throw std::runtime_error(concatenate({"ruFailurePolicy: '", text, "' is neither fail nor incomplete"}));
}

std::optional<std::string> ru_silence(const RuProxy& ru, Clock::time_point now, Clock::time_point run_start,
                                      double ru_timeout) {
  if (ru.state() == RuProxy::State::alive && now - ru.last_heard() > seconds(ru_timeout))
    return concatenate({"no status for ", to_text(seconds_between(ru.last_heard(), now)), " s"});
  if (ru.state() == RuProxy::State::unknown && now - run_start > seconds(ru_timeout + kStartGrace))
    return concatenate({"no status since the run started ", to_text(seconds_between(run_start, now)), " s ago"});
  return std::nullopt;
}

RuDownVerdict ru_down_verdict(RuFailurePolicy policy, const RuProxy& ru, const std::string& why) {
  RuDownVerdict verdict{concatenate({"RU ", to_text(std::uint64_t{ru.tid()}), " is down: ", why}),
                        policy == RuFailurePolicy::fail, {}};
  if (!verdict.fail_run) verdict.log_line = concatenate({verdict.reason, "; events are built without it, flagged incomplete"});
  return verdict;
}

}  // namespace daqx::evb::evm
