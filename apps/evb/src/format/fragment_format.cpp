// The super-fragment format's sizes and pattern seeds.
//
// Source fragment layout (CMS FED style), all little-endian:
//   header, 24 bytes
//     0  u32  magic 0xFED0DA9C
//     4  u16  source index (low 16 bits of the source number, 0-based, in order)
//     6  u16  flags: bit 0 = the payload holds the pattern and the trailer its CRC-32C
//     8  u32  payload size, bytes (padding excluded)
//    12  u64  event id
//    20  u32  contributor (the sender's TID)
//   payload, padded with zeros to a multiple of 8 (with the pattern; without it, payload and padding are
//     left as the buffer held them)
//   trailer, 8 bytes
//     0  u32  CRC-32C of the payload bytes (padding excluded); 0 without the pattern
//     4  u32  length of the whole source fragment, header to trailer, in 64-bit words (CMS's evt_lgth)
// Pattern: payload byte q is byte q % 8 of the little-endian word seed + (q / 8) * 0x9E3779B97F4A7C15,
// seed = splitmix64(event ^ splitmix64(source)).
#include "format/fragment_format.hpp"

#include "daqx/apps/splitmix64.hpp"

namespace daqx::evb {

namespace fragment_layout {

std::uint64_t pattern_seed(std::uint64_t event, std::uint32_t source) noexcept {
  return apps::splitmix64(event ^ apps::splitmix64(source));
}

apps::LogNormalSizes payload_sizes(const FragmentShape& shape) noexcept {
  return apps::LogNormalSizes(shape.mean_size, shape.spread, shape.max_size);
}

std::uint32_t payload_size(const FragmentShape& shape, const apps::LogNormalSizes& sizes, std::uint64_t event,
                           std::uint32_t source) noexcept {
  using apps::splitmix64;
  return sizes.size(splitmix64(splitmix64(splitmix64(shape.seed) ^ event) ^ source));
}

}  // namespace fragment_layout

std::uint32_t source_payload_size(const FragmentShape& shape, std::uint64_t event, std::uint32_t source) noexcept {
  return fragment_layout::payload_size(shape, fragment_layout::payload_sizes(shape), event, source);
}

std::size_t superfragment_size(const FragmentShape& shape, std::uint64_t event) noexcept {
  const apps::LogNormalSizes sizes = fragment_layout::payload_sizes(shape);
  std::size_t total = 0;
  for (std::uint32_t source = 0; source < shape.sources; ++source)
    total += fragment_layout::fragment_bytes(fragment_layout::payload_size(shape, sizes, event, source));
  return total;
}

}  // namespace daqx::evb
