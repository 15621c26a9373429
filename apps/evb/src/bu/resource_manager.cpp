// The BU's slot limits and priority: pure functions of the slots' states, the output and the batch sizes.
#include "bu/resource_manager.hpp"

#include <algorithm>

#include "daqx/evb/protocol.hpp"

namespace daqx::evb::bu {

std::uint16_t builder_priority(std::uint32_t total_slots, std::uint32_t slots_in_use) noexcept {
  return static_cast<std::uint16_t>(255u * (total_slots - std::min(total_slots, slots_in_use)) / total_slots);
}

SlotLimit slot_limit(const BuConfiguration& config, std::uint32_t total, std::uint32_t in_output,
                     std::uint64_t batch_bytes) noexcept {
  SlotLimit limit{output_state::running, total};
  if (in_output >= config.block_level * total && config.output != OutputKind::discard) {
    limit.output_state = output_state::blocked;
    limit.slots = 0;
  } else if (in_output >= config.throttle_level * total && config.output != OutputKind::discard) {
    limit.output_state = output_state::throttled;
    limit.slots = std::max<std::uint32_t>(1, total / 4);
  }
  // Memory: a slot holds its blocks until its whole batch is built, so the slots in use must fit the received
  // blocks the transport can lend (else every slot ends part-filled and nothing completes). Until a batch has
  // shown how big batches are, two slots at a time.
  const std::uint32_t memory_limit =
      batch_bytes == 0 ? 2
                       : static_cast<std::uint32_t>(std::clamp<std::uint64_t>(config.memory_budget / batch_bytes, 1, total));
  limit.slots = std::min(limit.slots, memory_limit);
  return limit;
}

std::uint64_t recent_batch_bytes(std::uint64_t previous, std::uint64_t held) noexcept {
  return std::max(held, previous - previous / 64);
}

}  // namespace daqx::evb::bu
