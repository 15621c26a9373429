// Fuzz target: the frame header check every transport runs on received bytes before anything else reads them.
// Properties: check_header never reads past the bytes it is given, and what it passes is a frame whose decoded
// length lies within the bounds it was asked to enforce.
#include <fuzzer/FuzzedDataProvider.h>

#include <cstdlib>
#include <vector>

#include "daqx/api/frame.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  FuzzedDataProvider input(data, size);
  const auto max_frame = input.ConsumeIntegralInRange<std::uint32_t>(0, 1u << 26);
  const bool length_known = input.ConsumeBool();
  // Exactly the bytes that remain, in a buffer of their own size: ASan sees any read past them.
  const std::vector<std::uint8_t> rest = input.ConsumeRemainingBytes<std::uint8_t>();
  const auto* bytes = reinterpret_cast<const std::byte*>(rest.data());
  const std::size_t present = length_known ? rest.size() : 0;
  const daqx::FrameCheck check = daqx::check_header(bytes, rest.size(), present, max_frame);
  if (check != daqx::FrameCheck::ok) {
    if (daqx::to_string(check).empty()) std::abort();  // every refusal has words for the log
    return 0;
  }
  if (rest.size() < daqx::kFrameHeaderSize) std::abort();
  const daqx::FrameHeader header = daqx::decode_header(bytes);
  if (header.total_length < daqx::kFrameHeaderSize || header.total_length > max_frame) std::abort();
  if (length_known && header.total_length != rest.size()) std::abort();
  return 0;
}
