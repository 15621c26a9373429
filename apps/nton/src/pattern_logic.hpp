// The test pattern a Sender writes after each data header and a Receiver verifies, derived from
// (sender TID, sequence) so a frame delivered to the wrong place, out of order or corrupted is caught.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "daqx/mempool/block.hpp"

namespace daqx::nton {

// Byte p of the pattern (p counted from the first pattern byte) is byte p % 8 of the little-endian word
// seed + (p / 8) * kPatternStep: one addition per 8 bytes, so filling runs at memory speed, and any
// shifted, swapped or foreign block of bytes differs.
inline constexpr std::uint64_t kPatternStep = 0x9E3779B97F4A7C15ull;

std::uint64_t pattern_seed(std::uint32_t sender, std::uint64_t sequence) noexcept;

// Writes (verifies) the pattern bytes [position, position + bytes.size()) of the given seed into (in) bytes.
void fill_pattern(std::span<std::byte> bytes, std::uint64_t position, std::uint64_t seed) noexcept;
bool verify_pattern(std::span<const std::byte> bytes, std::uint64_t position, std::uint64_t seed) noexcept;

// The same over a chain: pattern position 0 is at byte offset of the chain (see chain_logic.hpp), for
// length bytes. False when the chain is shorter, or (verify) when any byte differs.
bool fill_pattern(const mem::Block* head, std::size_t offset, std::size_t length, std::uint64_t seed) noexcept;
bool verify_pattern(const mem::Block* head, std::size_t offset, std::size_t length, std::uint64_t seed) noexcept;

}  // namespace daqx::nton
