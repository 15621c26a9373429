// Streams one synthetic super-fragment (fragment_format.hpp) into successive windows, as many as it takes,
// filling and checksumming payloads in one pass.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "daqx/apps/lognormal_sizes.hpp"
#include "format/fragment_format.hpp"

namespace daqx::evb {

// begin(), then write() until remaining() is 0.
class SuperFragmentWriter {
 public:
  // contributor is written into every source header (the sender's TID), so a misrouted fragment is caught.
  std::size_t begin(const FragmentShape& shape, std::uint64_t event, std::uint32_t contributor) noexcept;
  // Writes up to room bytes of what comes next; returns how many.
  std::size_t write(std::byte* out, std::size_t room) noexcept;
  std::size_t total() const noexcept;
  std::size_t remaining() const noexcept;

 private:
  void start_source() noexcept;  // sets up source_: its payload size, pattern seed, fresh CRC

  FragmentShape shape_;              // a copy: the caller may change or drop its own while we write
  apps::LogNormalSizes sizes_;       // the shape's size distribution, made once in begin()
  // Payload sizes of the first sources, kept from begin() (each costs a log, a cosine and an exponential).
  static constexpr std::uint32_t kKeptSizes = 64;
  std::array<std::uint32_t, kKeptSizes> kept_sizes_{};
  std::uint64_t event_ = 0;
  std::uint32_t contributor_ = 0;
  std::uint32_t source_ = 0;         // the source being written
  std::uint32_t payload_size_ = 0;   // of that source
  std::uint64_t pattern_seed_ = 0;   // of that source
  std::size_t position_ = 0;         // bytes of that source's fragment written so far
  std::uint32_t crc_ = 0;            // CRC-32C of its payload so far
  std::size_t total_ = 0;
  std::size_t written_ = 0;
};

}  // namespace daqx::evb
