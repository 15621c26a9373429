// The BU's resource limits: how many of its slots (slot_table.hpp) may be offered given the output's backlog and
// the memory budget, the batch size that budget counts with, and the priority the BU asks the EvM for.
#pragma once

#include <cstdint>

#include "bu/bu_configuration.hpp"

namespace daqx::evb::bu {

// The BU's priority for the EvM, 0 to 255: highest with every slot free, falling as slots fill (offered,
// building or waiting for the output), so the EvM favours the emptiest BUs.
std::uint16_t builder_priority(std::uint32_t total_slots, std::uint32_t slots_in_use) noexcept;

// How many slots may be offered or building now, and the output state the EvM is told.
struct SlotLimit {
  std::uint16_t output_state = 0;  // evb::output_state
  std::uint32_t slots = 0;
};
// The output's backlog throttles (a quarter of the slots) then blocks (none); the memory budget allows as many
// slots as batches of batch_bytes fit in it, or two while batch_bytes is 0 (no batch built yet).
SlotLimit slot_limit(const BuConfiguration& config, std::uint32_t total_slots, std::uint32_t slots_in_output,
                     std::uint64_t batch_bytes) noexcept;

// The batch size the memory budget counts with after a batch that held `held` bytes: the largest recent batch,
// decaying slowly, so one small batch does not open the gates to big ones.
std::uint64_t recent_batch_bytes(std::uint64_t previous, std::uint64_t held) noexcept;

}  // namespace daqx::evb::bu
