// Synthetic super-fragments for test mode: what an RU (or the EvM, for its trigger fragment) sends for one
// event, and how a BU checks it. A super-fragment is the concatenation of one fragment per data source, each
// in the CMS FED style: a header (event id, source, sizes), the payload, and a trailer with a CRC-32C of the
// payload, so the writer can stream it into as many blocks as it takes and the checker can verify it across
// the blocks it arrived in. Layout: docs/evb.md, "Super-fragment format".
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace daqx::evb {

// CRC-32C (Castagnoli), continuing from crc (start with 0). Uses the SSE4.2 instruction when the CPU has it.
std::uint32_t crc32c(std::uint32_t crc, const std::byte* data, std::size_t size) noexcept;

// For tests: both implementations must agree, so a test can choose one.
namespace test_hooks {
bool crc32c_hardware_available() noexcept;
// Selects hardware (when the CPU has it) or software; returns whether hardware was in use before.
bool use_crc32c_hardware(bool hardware) noexcept;
}  // namespace test_hooks

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

// Streams one super-fragment into successive windows: begin(), then write() until remaining() is 0.
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
  bool fixed_size_ = true;           // the shape's log-normal parameters, computed once in begin()
  double mu_ = 0;
  double sigma_ = 0;
  // Payload sizes of the first sources, kept from begin() (each costs a log, a cosine and an exponential).
  static constexpr std::uint32_t kKeptSizes = 64;
  std::array<std::uint32_t, kKeptSizes> sizes_{};
  std::uint64_t event_ = 0;
  std::uint32_t contributor_ = 0;
  std::uint32_t source_ = 0;         // the source being written
  std::uint32_t payload_size_ = 0;   // of that source
  std::uint64_t pattern_seed_ = 0;   // of that source
  std::size_t position_ = 0;         // bytes of that source's fragment written so far
  std::uint32_t crc_ = 0;            // CRC-32C register (inverted CRC) of its payload so far
  std::size_t total_ = 0;
  std::size_t written_ = 0;
};

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
