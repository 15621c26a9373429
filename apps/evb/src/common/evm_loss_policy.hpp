// The EvM-loss policy of RUs and BUs, in one place: a unit that has heard from the EvM in this run and then
// hears nothing for evmTimeout presumes the EvM dead and fails (the run cannot go on without the one unit that
// numbers and assigns events). Silence is expected once the EvM said the run ended, and a gap in the unit's own
// ticks (the process was stopped or swapped out) restarts the clock instead of counting against the EvM.
// Dispatch thread only.
#pragma once

#include <optional>
#include <string>

#include "daqx/evb/protocol.hpp"
#include "common/dispatch.hpp"

namespace daqx::evb {

class EvmLossPolicy {
 public:
  // A new run: nothing heard yet, no end announced.
  void reset() noexcept;
  // Any message from the EvM.
  void heard(Clock::time_point now) noexcept;
  // The EvM said the run ended (or started a new one: ended false).
  void set_run_ended(bool ended) noexcept { run_ended_ = ended; }
  bool run_ended() const noexcept { return run_ended_; }
  // Called on every tick: the reason to fail the run when the EvM is presumed dead, otherwise nothing.
  std::optional<std::string> check(Clock::time_point now, Tid evm, double timeout_s);

 private:
  bool heard_ = false;
  bool run_ended_ = false;
  Clock::time_point last_heard_{};
  Clock::time_point last_tick_{};
};

}  // namespace daqx::evb
