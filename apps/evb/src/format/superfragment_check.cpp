// The super-fragment checker: reads the pieces as one stream, source fragment by source fragment.
#include "format/superfragment_check.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstring>
#include <initializer_list>
#include <string_view>

#include "daqx/api/frame.hpp"
#include "daqx/apps/crc32c.hpp"
#include "daqx/apps/text.hpp"
#include "format/fragment_format.hpp"

namespace daqx::evb {
namespace {

using namespace fragment_layout;

std::string hex(std::uint64_t value) {
  char digits[16];
  const auto result = std::to_chars(digits, digits + sizeof digits, value, 16);
  return apps::concatenate({"0x", std::string_view(digits, static_cast<std::size_t>(result.ptr - digits))});
}
std::string decimal(std::uint64_t value) { return std::to_string(value); }

// Reads a sequence of pieces as one stream of bytes.
class PieceCursor {
 public:
  explicit PieceCursor(std::span<const std::span<const std::byte>> pieces) noexcept : pieces_(pieces) {
    for (const auto& piece : pieces) left_ += piece.size();
  }
  std::size_t left() const noexcept { return left_; }

  // Calls f(pointer, length) for the next n bytes, piece by piece; n <= left().
  template <typename F>
  void consume(std::size_t n, F&& f) {
    left_ -= n;
    while (n > 0) {
      const std::span<const std::byte> piece = pieces_[index_];
      const std::size_t here = std::min(n, piece.size() - offset_);
      if (here != 0) f(piece.data() + offset_, here);
      offset_ += here;
      n -= here;
      if (offset_ == piece.size()) {
        ++index_;
        offset_ = 0;
      }
    }
  }
  void copy(std::byte* to, std::size_t n) {
    consume(n, [&to](const std::byte* from, std::size_t size) {
      std::memcpy(to, from, size);
      to += size;
    });
  }

 private:
  std::span<const std::span<const std::byte>> pieces_;
  std::size_t index_ = 0;
  std::size_t offset_ = 0;
  std::size_t left_ = 0;
};

}  // namespace

FragmentCheck verify_superfragment(std::span<const std::span<const std::byte>> pieces, std::uint64_t event,
                                   std::uint32_t contributor, bool check_crc) {
  FragmentCheck check;
  PieceCursor cursor(pieces);
  const auto fail = [&check](std::uint32_t source, std::initializer_list<std::string_view> what) {
    check.ok = false;
    check.problem = apps::concatenate({"source ", decimal(source), ": "});
    for (std::string_view part : what) check.problem.append(part);
    return check;
  };
  for (std::uint32_t source = 0; cursor.left() != 0; ++source) {
    if (cursor.left() < kSourceHeaderBytes)
      return fail(source, {decimal(cursor.left()), " bytes left, less than a header (truncated, or bytes after the "
                                                   "last source fragment)"});
    std::array<std::byte, kSourceHeaderBytes> header;
    cursor.copy(header.data(), header.size());
    const auto magic = detail::load_le<std::uint32_t>(header.data() + 0);
    const auto index = detail::load_le<std::uint16_t>(header.data() + 4);
    const auto flags = detail::load_le<std::uint16_t>(header.data() + 6);
    const auto payload = detail::load_le<std::uint32_t>(header.data() + 8);
    const auto header_event = detail::load_le<std::uint64_t>(header.data() + 12);
    const auto header_contributor = detail::load_le<std::uint32_t>(header.data() + 20);
    if (magic != kSourceMagic)
      return fail(source, {"magic ", hex(magic), " where ", hex(kSourceMagic), " was expected"});
    if (index != static_cast<std::uint16_t>(source))
      return fail(source, {"source index ", decimal(index), " where ", decimal(source & 0xFFFFu), " was expected"});
    if (header_event != event)
      return fail(source, {"event ", decimal(header_event), " where ", decimal(event), " was expected"});
    if (header_contributor != contributor)
      return fail(source, {"contributor ", decimal(header_contributor), " where ", decimal(contributor),
                           " was expected"});
    const std::size_t rest = padded(payload) + kSourceTrailerBytes;
    if (cursor.left() < rest)
      return fail(source, {"payload of ", decimal(payload), " bytes and trailer need ", decimal(rest), " bytes, only ",
                           decimal(cursor.left()), " left"});

    const bool crc_checked = check_crc && (flags & kFlagPattern) != 0;
    std::uint32_t crc = 0;
    if (crc_checked) {
      cursor.consume(payload, [&crc](const std::byte* data, std::size_t size) { crc = apps::crc32c(crc, data, size); });
      std::uint8_t padding = 0;
      cursor.consume(padded(payload) - payload, [&padding](const std::byte* data, std::size_t size) {
        for (std::size_t i = 0; i < size; ++i) padding |= static_cast<std::uint8_t>(data[i]);
      });
      if (padding != 0) return fail(source, {"padding after the payload is not zero"});
    } else {
      cursor.consume(padded(payload), [](const std::byte*, std::size_t) {});
    }

    std::array<std::byte, kSourceTrailerBytes> trailer;
    cursor.copy(trailer.data(), trailer.size());
    const auto trailer_crc = detail::load_le<std::uint32_t>(trailer.data() + 0);
    const auto trailer_words = detail::load_le<std::uint32_t>(trailer.data() + 4);
    const std::size_t words = fragment_bytes(payload) / 8;
    if (trailer_words != words)
      return fail(source, {"trailer length ", decimal(trailer_words), " words where the header's payload size makes ",
                           decimal(words)});
    if (crc_checked && trailer_crc != crc)
      return fail(source, {"payload CRC-32C is ", hex(crc), " where the trailer says ", hex(trailer_crc)});
    check.sources = source + 1;
  }
  return check;
}

}  // namespace daqx::evb
