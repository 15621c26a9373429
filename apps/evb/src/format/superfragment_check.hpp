// Checks a synthetic super-fragment (fragment_format.hpp) as it arrived, in pieces, naming the first problem.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace daqx::evb {

// Checks one contributor's super-fragment as it arrived, in pieces: every source fragment's header (magic,
// event, contributor, sizes consistent with the pieces), trailer (CRC when the header says it has one and
// check_crc is set). ok, or the first problem in words ("source 3: event 17 where 18 was expected").
struct FragmentCheck {
  bool ok = true;
  std::string problem;
  std::uint32_t sources = 0;
};
FragmentCheck verify_superfragment(std::span<const std::span<const std::byte>> pieces, std::uint64_t event,
                                   std::uint32_t contributor, bool check_crc);

}  // namespace daqx::evb
