// The synthetic super-fragment format for test mode: what an RU (or the EvM, for its trigger fragment) sends
// for one event. A super-fragment is the concatenation of one fragment per data source, each in the CMS FED
// style: a header (event id, source, sizes), the payload, and a trailer with a CRC-32C of the payload, so a
// writer can stream it into as many blocks as it takes and a checker can verify it across the blocks it
// arrived in. Layout: docs/evb-protocol.md, "Super-fragment format", and fragment_format.cpp.
#pragma once

#include <cstddef>
#include <cstdint>

#include "daqx/apps/lognormal_sizes.hpp"

namespace daqx::evb {

// The shape of one contributor's data.
struct FragmentShape {
  std::uint32_t sources = 8;     // data sources (FEDs) per super-fragment
  std::uint32_t mean_size = 2048;  // mean payload bytes per source fragment
  std::uint32_t spread = 0;      // standard deviation of the payload size (log-normal); 0: every fragment mean_size
  std::uint32_t max_size = 1u << 24;  // payload sizes are clamped to [0, max_size]
  bool pattern = true;           // fill payloads with a pattern and checksum them; false: headers and trailers only
  std::uint64_t seed = 0;        // sizes are a pure function of (seed, event, source)
};

inline constexpr std::size_t kSourceHeaderBytes = 24;
inline constexpr std::size_t kSourceTrailerBytes = 8;

// Payload bytes of one source fragment (deterministic).
std::uint32_t source_payload_size(const FragmentShape& shape, std::uint64_t event, std::uint32_t source) noexcept;
// Total bytes of the super-fragment of this event, headers, padding and trailers included.
std::size_t superfragment_size(const FragmentShape& shape, std::uint64_t event) noexcept;

// What the writer and the checker share beyond the sizes: the constants and rules of the layout.
namespace fragment_layout {

inline constexpr std::uint32_t kSourceMagic = 0xFED0DA9Cu;
inline constexpr std::uint16_t kFlagPattern = 0x1;  // the payload holds the pattern and the trailer its CRC-32C

constexpr std::size_t padded(std::uint32_t payload) noexcept { return (std::size_t{payload} + 7) & ~std::size_t{7}; }
constexpr std::size_t fragment_bytes(std::uint32_t payload) noexcept {
  return kSourceHeaderBytes + padded(payload) + kSourceTrailerBytes;
}

// The seed of a source's payload pattern (apps::crc32c_fill_pattern's counter pattern).
std::uint64_t pattern_seed(std::uint64_t event, std::uint32_t source) noexcept;

// The shape's payload size distribution, made once per super-fragment (it costs logarithms) ...
apps::LogNormalSizes payload_sizes(const FragmentShape& shape) noexcept;
// ... and one source's payload size drawn from it.
std::uint32_t payload_size(const FragmentShape& shape, const apps::LogNormalSizes& sizes, std::uint64_t event,
                           std::uint32_t source) noexcept;

}  // namespace fragment_layout

}  // namespace daqx::evb
