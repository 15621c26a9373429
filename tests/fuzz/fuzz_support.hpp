// What several fuzz targets check or take from their input the same way.
#pragma once

#include <fuzzer/FuzzedDataProvider.h>

#include <cstdlib>
#include <cstring>
#include <vector>

#include "daqx/api/frame.hpp"

namespace daqx::fuzz {

// The input's remaining bytes in a buffer of exactly their size, so that ASan sees any read past them.
inline std::vector<std::byte> remaining_bytes(FuzzedDataProvider& input) {
  const std::vector<std::uint8_t> raw = input.ConsumeRemainingBytes<std::uint8_t>();
  std::vector<std::byte> bytes(raw.size());
  if (!raw.empty()) std::memcpy(bytes.data(), raw.data(), raw.size());
  return bytes;
}

// A frame a receive path handed out is whole: its chain holds exactly the length its header declares, within the
// limit, and its header passes the check every transport runs. Aborts (a finding) otherwise; returns its size.
inline std::size_t require_whole_frame(const Frame& frame, std::uint32_t max_frame) {
  std::size_t bytes = 0;
  for (const mem::Block* b = frame.data.head(); b != nullptr; b = b->next()) bytes += b->size();
  if (bytes != frame.header.total_length || bytes > max_frame) std::abort();
  if (check_header(frame.data.data(), frame.data.size(), bytes, max_frame) != FrameCheck::ok) std::abort();
  return bytes;
}

}  // namespace daqx::fuzz
