#include "common/evm_loss_policy.hpp"

#include "daqx/apps/text.hpp"

namespace daqx::evb {
using apps::concatenate;
using apps::to_text;

void EvmLossPolicy::reset() noexcept {
  heard_ = false;
  run_ended_ = false;
}

void EvmLossPolicy::heard(Clock::time_point now) noexcept {
  heard_ = true;
  last_heard_ = now;
}

std::optional<std::string> EvmLossPolicy::check(Clock::time_point now, Tid evm, double timeout_s) {
  // After a long gap between ticks this process was not running (stopped, swapped out): the EvM's silence
  // meanwhile says nothing about the EvM, so its clock starts again.
  if (now - last_tick_ > seconds(timeout_s / 2)) last_heard_ = now;
  last_tick_ = now;
  if (!heard_ || run_ended_ || now - last_heard_ <= seconds(timeout_s)) return std::nullopt;
  return concatenate({"the EvM (TID ", to_text(std::uint64_t{evm}), ") was silent for ",
                      to_text(seconds_between(last_heard_, now)), " s: presumed dead, the run stopped"});
}

}  // namespace daqx::evb
