// builder_priority: the share of a BU's free slots, scaled to 0..255.
#include "common/builder_priority.hpp"

#include <algorithm>

namespace daqx::evb {

std::uint16_t builder_priority(std::uint32_t total_slots, std::uint32_t building, std::uint32_t in_output) {
  if (total_slots == 0) return 0;
  const std::uint32_t taken = std::min(total_slots, building + in_output);
  return static_cast<std::uint16_t>(255u * (total_slots - taken) / total_slots);
}

}  // namespace daqx::evb
