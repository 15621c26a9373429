// The streaming writer: header, pattern payload (filled and checksummed in one pass), zero padding and
// trailer of each source in turn, cut wherever a window ends.
#include "format/superfragment_writer.hpp"

#include <algorithm>
#include <cstring>

#include "daqx/api/frame.hpp"
#include "daqx/apps/crc32c.hpp"

namespace daqx::evb {

using namespace fragment_layout;

std::size_t SuperFragmentWriter::begin(const FragmentShape& shape, std::uint64_t event,
                                       std::uint32_t contributor) noexcept {
  shape_ = shape;
  sizes_ = payload_sizes(shape);
  event_ = event;
  contributor_ = contributor;
  total_ = 0;
  for (std::uint32_t source = 0; source < shape.sources; ++source) {
    const std::uint32_t size = payload_size(shape, sizes_, event, source);
    if (source < kKeptSizes) kept_sizes_[source] = size;
    total_ += fragment_bytes(size);
  }
  written_ = 0;
  source_ = 0;
  if (shape.sources != 0) start_source();
  return total_;
}

void SuperFragmentWriter::start_source() noexcept {
  payload_size_ = source_ < kKeptSizes ? kept_sizes_[source_] : payload_size(shape_, sizes_, event_, source_);
  position_ = 0;
  crc_ = 0;
  pattern_seed_ = pattern_seed(event_, source_);
}

std::size_t SuperFragmentWriter::total() const noexcept { return total_; }
std::size_t SuperFragmentWriter::remaining() const noexcept { return total_ - written_; }

std::size_t SuperFragmentWriter::write(std::byte* out, std::size_t room) noexcept {
  std::size_t done = 0;
  while (done < room && written_ < total_) {
    const std::size_t payload_end = kSourceHeaderBytes + payload_size_;
    const std::size_t padding_end = kSourceHeaderBytes + padded(payload_size_);
    const std::size_t fragment_end = padding_end + kSourceTrailerBytes;
    std::byte* at = out + done;
    const std::size_t free = room - done;
    std::size_t n = 0;
    if (position_ < kSourceHeaderBytes) {
      std::array<std::byte, kSourceHeaderBytes> header;
      detail::store_le<std::uint32_t>(header.data() + 0, kSourceMagic);
      detail::store_le<std::uint16_t>(header.data() + 4, static_cast<std::uint16_t>(source_));
      detail::store_le<std::uint16_t>(header.data() + 6, shape_.pattern ? kFlagPattern : std::uint16_t{0});
      detail::store_le<std::uint32_t>(header.data() + 8, payload_size_);
      detail::store_le<std::uint64_t>(header.data() + 12, event_);
      detail::store_le<std::uint32_t>(header.data() + 20, contributor_);
      n = std::min(free, kSourceHeaderBytes - position_);
      std::memcpy(at, header.data() + position_, n);
    } else if (position_ < payload_end) {
      n = std::min(free, payload_end - position_);
      // Without the pattern the payload is not touched at all: the point of that mode is speed.
      if (shape_.pattern) crc_ = apps::crc32c_fill_pattern(at, position_ - kSourceHeaderBytes, n, pattern_seed_, crc_);
    } else if (position_ < padding_end) {
      n = std::min(free, padding_end - position_);
      if (shape_.pattern) std::memset(at, 0, n);
    } else {
      std::array<std::byte, kSourceTrailerBytes> trailer;
      detail::store_le<std::uint32_t>(trailer.data() + 0, shape_.pattern ? crc_ : 0u);
      detail::store_le<std::uint32_t>(trailer.data() + 4, static_cast<std::uint32_t>(fragment_end / 8));
      const std::size_t at_trailer = position_ - padding_end;
      n = std::min(free, kSourceTrailerBytes - at_trailer);
      std::memcpy(at, trailer.data() + at_trailer, n);
    }
    done += n;
    written_ += n;
    position_ += n;
    if (position_ == fragment_end && ++source_ < shape_.sources) start_source();
  }
  return done;
}

}  // namespace daqx::evb
