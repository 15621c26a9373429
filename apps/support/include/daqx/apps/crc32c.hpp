// CRC-32C (Castagnoli) in software and, where the CPU has SSE4.2, in hardware; and the same fused with
// writing a counter pattern, for synthetic data that is checksummed as it is made.
#pragma once

#include <cstddef>
#include <cstdint>

namespace daqx::apps {

// CRC-32C, continuing from crc (start with 0). Uses the SSE4.2 instruction when the CPU has it.
std::uint32_t crc32c(std::uint32_t crc, const std::byte* data, std::size_t size) noexcept;

// The counter pattern: byte q of it is byte q % 8 of the little-endian word seed + (q / 8) * kCounterPatternStep.
inline constexpr std::uint64_t kCounterPatternStep = 0x9E3779B97F4A7C15ull;

// Writes bytes [offset, offset + size) of the counter pattern of seed to out and returns the CRC-32C continued
// from crc over them: one pass over the bytes instead of a fill and then a checksum.
std::uint32_t crc32c_fill_pattern(std::byte* out, std::uint64_t offset, std::size_t size, std::uint64_t seed,
                                  std::uint32_t crc) noexcept;

// For tests: both implementations must agree, so a test can choose one.
namespace test_hooks {
bool crc32c_hardware_available() noexcept;
// Selects hardware (when the CPU has it) or software; returns whether hardware was in use before.
bool use_crc32c_hardware(bool hardware) noexcept;
}  // namespace test_hooks

}  // namespace daqx::apps
