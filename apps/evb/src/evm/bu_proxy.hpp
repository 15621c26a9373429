// A builder unit as the EvM sees it (CMS's BUproxy): its state, generation, credits (free slots), priority,
// the batches out to it, and the counters published for it.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>

#include "daqx/api/application.hpp"
#include "daqx/evb/protocol.hpp"
#include "dispatch.hpp"

namespace daqx::evb {

struct BuProxy {
  Tid tid = kNoTid;
  enum class State { unknown, alive, dropped } state = State::unknown;
  std::uint32_t generation = 0;  // the BU's current generation; credits of others are refused
  std::uint64_t incarnation = 0;
  Clock::time_point last_heard{};
  Clock::time_point last_reset{};
  struct Credit {
    std::uint32_t slot;
    Clock::time_point since;
  };
  std::deque<Credit> credits;
  std::uint16_t priority = 0;
  std::uint16_t output_state = 0;
  struct Batch {
    std::uint64_t first_event;
    std::uint32_t count;
  };
  std::map<std::uint32_t, Batch> outstanding;  // slot -> batch assigned to it
  std::uint64_t events_in_flight = 0;
  std::string dropped_because;  // the last drop's reason, for the status when no BU is left
  // Published for report().
  std::unique_ptr<Counter> assigned = std::make_unique<Counter>(0);
  std::unique_ptr<Counter> completed = std::make_unique<Counter>(0);
  std::unique_ptr<Counter> lost = std::make_unique<Counter>(0);
  std::unique_ptr<Counter> drops = std::make_unique<Counter>(0);
  std::unique_ptr<Counter> published_state = std::make_unique<Counter>(0);  // 0 unknown, 1 alive, 2 dropped
  std::unique_ptr<Counter> published_credits = std::make_unique<Counter>(0);
  std::unique_ptr<Counter> published_output_state = std::make_unique<Counter>(0);
};

}  // namespace daqx::evb
