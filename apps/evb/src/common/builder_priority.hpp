// How eager a builder unit says it is for events: the share of its slots neither building nor in output.
#pragma once

#include <cstdint>

namespace daqx::evb {

// 255 for an idle BU, falling as its slots fill (being built or waiting for output), 0 when all are taken.
// The EvM serves the highest priority first, so a filling BU gets less until it has caught up.
std::uint16_t builder_priority(std::uint32_t total_slots, std::uint32_t building, std::uint32_t in_output);

}  // namespace daqx::evb
