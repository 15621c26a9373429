// A readout unit as the EvM sees it: its state, incarnation, liveness and the assignments not yet sent to it.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "daqx/api/application.hpp"
#include "daqx/evb/protocol.hpp"
#include "dispatch.hpp"

namespace daqx::evb {

struct RuProxy {
  Tid tid = kNoTid;
  enum class State { unknown, alive, down } state = State::unknown;
  std::uint64_t incarnation = 0;
  Clock::time_point last_heard{};
  std::vector<Assignment> pending;  // assignments not yet sent in an Allocate
  std::unique_ptr<Counter> published_state = std::make_unique<Counter>(0);  // 0 unknown, 1 alive, 2 down
};

}  // namespace daqx::evb
