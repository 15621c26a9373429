// Synthetic super-fragments: CRC-32C, log-normal source sizes, the streaming writer and the checker.
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
#include "fragment_logic.hpp"

#include <array>
#include <atomic>
#include <charconv>
#include <cmath>
#include <numbers>
#include <string_view>

#include "daqx/apps/text.hpp"
#include "daqx/api/frame.hpp"

#if defined(__x86_64__) || defined(__i386__)
#include <nmmintrin.h>
#define DAQX_EVB_HAVE_SSE42_PATH 1
#endif

namespace daqx::evb {
namespace {

constexpr std::uint32_t kSourceMagic = 0xFED0DA9Cu;
constexpr std::uint16_t kFlagPattern = 0x1;
constexpr std::uint64_t kPatternStep = 0x9E3779B97F4A7C15ull;

constexpr std::uint64_t splitmix64(std::uint64_t x) noexcept {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

constexpr std::size_t padded(std::uint32_t payload) noexcept { return (std::size_t{payload} + 7) & ~std::size_t{7}; }
constexpr std::size_t fragment_bytes(std::uint32_t payload) noexcept {
  return kSourceHeaderBytes + padded(payload) + kSourceTrailerBytes;
}

std::uint64_t pattern_seed(std::uint64_t event, std::uint32_t source) noexcept {
  return splitmix64(event ^ splitmix64(source));
}
std::uint8_t pattern_byte(std::uint64_t seed, std::uint64_t offset) noexcept {
  return static_cast<std::uint8_t>((seed + (offset / 8) * kPatternStep) >> (8 * (offset % 8)));
}

// ---- CRC-32C -------------------------------------------------------------------------------------------
// Both implementations work on the CRC register (the inverted CRC); crc32c() inverts on entry and exit.

using CrcTables = std::array<std::array<std::uint32_t, 256>, 8>;

// Slice-by-8 tables of the reflected Castagnoli polynomial: tables[k][b] is b's CRC followed by k zero bytes.
constexpr CrcTables make_crc_tables() noexcept {
  CrcTables t{};
  for (std::uint32_t b = 0; b < 256; ++b) {
    std::uint32_t crc = b;
    for (int bit = 0; bit < 8; ++bit) crc = (crc >> 1) ^ ((crc & 1u) != 0 ? 0x82F63B78u : 0u);
    t[0][b] = crc;
  }
  for (std::size_t k = 1; k < 8; ++k)
    for (std::size_t b = 0; b < 256; ++b) t[k][b] = (t[k - 1][b] >> 8) ^ t[0][t[k - 1][b] & 0xFFu];
  return t;
}
constexpr CrcTables kCrcTables = make_crc_tables();

inline std::uint32_t software_crc_byte(std::uint32_t state, std::uint8_t byte) noexcept {
  return (state >> 8) ^ kCrcTables[0][(state ^ byte) & 0xFFu];
}
// The word's bytes in little-endian order, as they lie in memory.
inline std::uint32_t software_crc_word(std::uint32_t state, std::uint64_t word) noexcept {
  word ^= state;
  return kCrcTables[7][word & 0xFF] ^ kCrcTables[6][(word >> 8) & 0xFF] ^ kCrcTables[5][(word >> 16) & 0xFF] ^
         kCrcTables[4][(word >> 24) & 0xFF] ^ kCrcTables[3][(word >> 32) & 0xFF] ^
         kCrcTables[2][(word >> 40) & 0xFF] ^ kCrcTables[1][(word >> 48) & 0xFF] ^ kCrcTables[0][word >> 56];
}

std::uint32_t software_crc(std::uint32_t state, const std::byte* data, std::size_t size) noexcept {
  std::size_t i = 0;
  for (; i + 8 <= size; i += 8) state = software_crc_word(state, detail::load_le<std::uint64_t>(data + i));
  for (; i < size; ++i) state = software_crc_byte(state, static_cast<std::uint8_t>(data[i]));
  return state;
}

// Writes the pattern bytes [offset, offset + size) of seed to out and returns the CRC register over them.
std::uint32_t software_fill(std::byte* out, std::uint64_t offset, std::size_t size, std::uint64_t seed,
                            std::uint32_t state) noexcept {
  std::size_t i = 0;
  // A window may start or end anywhere in a word: those bytes one at a time.
  for (; i < size && (offset + i) % 8 != 0; ++i) {
    const std::uint8_t b = pattern_byte(seed, offset + i);
    out[i] = std::byte{b};
    state = software_crc_byte(state, b);
  }
  std::uint64_t word = seed + ((offset + i) / 8) * kPatternStep;
  for (; i + 8 <= size; i += 8, word += kPatternStep) {
    detail::store_le<std::uint64_t>(out + i, word);
    state = software_crc_word(state, word);
  }
  for (; i < size; ++i) {
    const std::uint8_t b = pattern_byte(seed, offset + i);
    out[i] = std::byte{b};
    state = software_crc_byte(state, b);
  }
  return state;
}

#ifdef DAQX_EVB_HAVE_SSE42_PATH
// The same two with the CRC32 instruction (the loops are spelled out again: GCC does not inline SSE4.2
// intrinsics into functions compiled without the target). One chain of CRC32 instructions is bound by their
// 3-cycle latency; three independent chains over three consecutive stretches keep the unit busy, and the
// linearity of the CRC joins them: reg(s, A B C) = shift(reg(s, A), 2L) ^ shift(reg(0, B), L) ^ reg(0, C),
// where shift(x, n) is the register after n zero bytes (measured filling 64 KiB windows with large payloads:
// 8.5 GB/s with one chain, 23 GB/s with three, per core).
constexpr std::size_t kStreamWords = 64;  // per stream and round: rounds of 1.5 KiB
constexpr std::size_t kStreamBytes = kStreamWords * 8;

using ShiftTable = std::array<std::array<std::uint32_t, 256>, 4>;

// shift(x, bytes) by table: x's four bytes each index the shifted register of that byte alone (shift is linear).
constexpr ShiftTable make_shift_table(std::size_t bytes) noexcept {
  std::array<std::uint32_t, 32> bit{};
  for (std::size_t b = 0; b < 32; ++b) {
    std::uint32_t reg = 1u << b;
    for (std::size_t i = 0; i < bytes; ++i) reg = (reg >> 8) ^ kCrcTables[0][reg & 0xFFu];
    bit[b] = reg;
  }
  ShiftTable t{};
  for (std::size_t k = 0; k < 4; ++k)
    for (std::size_t v = 0; v < 256; ++v)
      for (std::size_t b = 0; b < 8; ++b)
        if ((v >> b) & 1u) t[k][v] ^= bit[8 * k + b];
  return t;
}
constexpr ShiftTable kShiftOneStream = make_shift_table(kStreamBytes);
constexpr ShiftTable kShiftTwoStreams = make_shift_table(2 * kStreamBytes);

inline std::uint32_t shift(const ShiftTable& t, std::uint32_t reg) noexcept {
  return t[0][reg & 0xFFu] ^ t[1][(reg >> 8) & 0xFFu] ^ t[2][(reg >> 16) & 0xFFu] ^ t[3][reg >> 24];
}
inline std::uint32_t join(std::uint64_t a, std::uint64_t b, std::uint64_t c) noexcept {
  return shift(kShiftTwoStreams, static_cast<std::uint32_t>(a)) ^
         shift(kShiftOneStream, static_cast<std::uint32_t>(b)) ^ static_cast<std::uint32_t>(c);
}

__attribute__((target("sse4.2"))) std::uint32_t hardware_crc(std::uint32_t state, const std::byte* data,
                                                              std::size_t size) noexcept {
  std::uint64_t wide = state;
  std::size_t i = 0;
  for (; i + 3 * kStreamBytes <= size; i += 3 * kStreamBytes) {
    std::uint64_t b = 0;
    std::uint64_t c = 0;
    for (std::size_t w = 0; w < kStreamBytes; w += 8) {
      wide = _mm_crc32_u64(wide, detail::load_le<std::uint64_t>(data + i + w));
      b = _mm_crc32_u64(b, detail::load_le<std::uint64_t>(data + i + kStreamBytes + w));
      c = _mm_crc32_u64(c, detail::load_le<std::uint64_t>(data + i + 2 * kStreamBytes + w));
    }
    wide = join(wide, b, c);
  }
  for (; i + 8 <= size; i += 8) wide = _mm_crc32_u64(wide, detail::load_le<std::uint64_t>(data + i));
  state = static_cast<std::uint32_t>(wide);
  for (; i < size; ++i) state = _mm_crc32_u8(state, static_cast<std::uint8_t>(data[i]));
  return state;
}

__attribute__((target("sse4.2"))) std::uint32_t hardware_fill(std::byte* out, std::uint64_t offset, std::size_t size,
                                                               std::uint64_t seed, std::uint32_t state) noexcept {
  std::size_t i = 0;
  for (; i < size && (offset + i) % 8 != 0; ++i) {
    const std::uint8_t b = pattern_byte(seed, offset + i);
    out[i] = std::byte{b};
    state = _mm_crc32_u8(state, b);
  }
  std::uint64_t wide = state;
  std::uint64_t word = seed + ((offset + i) / 8) * kPatternStep;
  constexpr std::uint64_t kStreamStep = kStreamWords * kPatternStep;
  for (; i + 3 * kStreamBytes <= size; i += 3 * kStreamBytes, word += 3 * kStreamStep) {
    std::uint64_t b = 0;
    std::uint64_t c = 0;
    std::uint64_t word_a = word;
    for (std::size_t w = 0; w < kStreamBytes; w += 8, word_a += kPatternStep) {
      const std::uint64_t word_b = word_a + kStreamStep;
      const std::uint64_t word_c = word_b + kStreamStep;
      detail::store_le<std::uint64_t>(out + i + w, word_a);
      detail::store_le<std::uint64_t>(out + i + kStreamBytes + w, word_b);
      detail::store_le<std::uint64_t>(out + i + 2 * kStreamBytes + w, word_c);
      wide = _mm_crc32_u64(wide, word_a);
      b = _mm_crc32_u64(b, word_b);
      c = _mm_crc32_u64(c, word_c);
    }
    wide = join(wide, b, c);
  }
  for (; i + 8 <= size; i += 8, word += kPatternStep) {
    detail::store_le<std::uint64_t>(out + i, word);
    wide = _mm_crc32_u64(wide, word);
  }
  state = static_cast<std::uint32_t>(wide);
  for (; i < size; ++i) {
    const std::uint8_t b = pattern_byte(seed, offset + i);
    out[i] = std::byte{b};
    state = _mm_crc32_u8(state, b);
  }
  return state;
}

bool cpu_has_sse42() noexcept {
  __builtin_cpu_init();
  return __builtin_cpu_supports("sse4.2") != 0;
}
#else
bool cpu_has_sse42() noexcept { return false; }
#endif

struct CrcImplementation {
  std::uint32_t (*crc)(std::uint32_t, const std::byte*, std::size_t) noexcept;
  std::uint32_t (*fill)(std::byte*, std::uint64_t, std::size_t, std::uint64_t, std::uint32_t) noexcept;
};
constexpr CrcImplementation kSoftware{software_crc, software_fill};
#ifdef DAQX_EVB_HAVE_SSE42_PATH
constexpr CrcImplementation kHardware{hardware_crc, hardware_fill};
#endif

bool hardware_available() noexcept {
  static const bool available = cpu_has_sse42();  // asked once
  return available;
}

const CrcImplementation* best_implementation() noexcept {
#ifdef DAQX_EVB_HAVE_SSE42_PATH
  if (hardware_available()) return &kHardware;
#endif
  return &kSoftware;
}

// Atomic only so that the test hook below may switch it; a relaxed load is a plain load.
std::atomic<const CrcImplementation*> selected{nullptr};

const CrcImplementation& implementation() noexcept {
  const CrcImplementation* chosen = selected.load(std::memory_order_relaxed);
  if (chosen == nullptr) {
    chosen = best_implementation();
    selected.store(chosen, std::memory_order_relaxed);
  }
  return *chosen;
}

// ---- sizes ---------------------------------------------------------------------------------------------

// The log-normal's parameters for the requested mean m and standard deviation s:
// sigma^2 = ln(1 + s^2/m^2), mu = ln(m) - sigma^2/2.
struct SizeModel {
  bool fixed = true;  // spread 0 (or mean 0): every size is the mean
  double mu = 0;
  double sigma = 0;
};

SizeModel size_model(const FragmentShape& shape) noexcept {
  SizeModel m;
  if (shape.spread == 0 || shape.mean_size == 0) return m;
  const double mean = shape.mean_size;
  const double ratio = static_cast<double>(shape.spread) / mean;
  const double variance = std::log1p(ratio * ratio);
  m.fixed = false;
  m.sigma = std::sqrt(variance);
  m.mu = std::log(mean) - variance / 2;
  return m;
}

std::uint32_t payload_size(const FragmentShape& shape, const SizeModel& m, std::uint64_t event,
                           std::uint32_t source) noexcept {
  if (m.fixed) return shape.mean_size < shape.max_size ? shape.mean_size : shape.max_size;
  // Counter-based: two uniform numbers that depend on (seed, event, source) only, then Box-Muller.
  const std::uint64_t key = splitmix64(splitmix64(splitmix64(shape.seed) ^ event) ^ source);
  const std::uint64_t r1 = splitmix64(key);
  const std::uint64_t r2 = splitmix64(key + 0x9E3779B97F4A7C15ull);
  const double u1 = static_cast<double>((r1 >> 11) + 1) * 0x1p-53;  // (0, 1]: the logarithm stays finite
  const double u2 = static_cast<double>(r2 >> 11) * 0x1p-53;        // [0, 1)
  const double normal = std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
  const double size = std::exp(m.mu + m.sigma * normal);
  const double max = shape.max_size;
  if (!(size < max)) return shape.max_size;  // also catches an infinity
  return static_cast<std::uint32_t>(std::floor(size + 0.5));
}

// ---- checking ------------------------------------------------------------------------------------------

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

// Test hooks, declared where they are used (tests/fragment_test.cpp): both CRC-32C implementations on
// one machine.
namespace test_hooks {
bool crc32c_hardware_available() noexcept { return hardware_available(); }
// Selects the implementation crc32c() and the writer use; returns whether hardware was in use before.
// hardware = true falls back to software when the CPU lacks SSE4.2.
bool use_crc32c_hardware(bool hardware) noexcept {
  const bool before = &implementation() != &kSoftware;
  selected.store(hardware ? best_implementation() : &kSoftware, std::memory_order_relaxed);
  return before;
}
}  // namespace test_hooks

std::uint32_t crc32c(std::uint32_t crc, const std::byte* data, std::size_t size) noexcept {
  return ~implementation().crc(~crc, data, size);
}

std::uint32_t source_payload_size(const FragmentShape& shape, std::uint64_t event, std::uint32_t source) noexcept {
  return payload_size(shape, size_model(shape), event, source);
}

std::size_t superfragment_size(const FragmentShape& shape, std::uint64_t event) noexcept {
  const SizeModel model = size_model(shape);
  std::size_t total = 0;
  for (std::uint32_t source = 0; source < shape.sources; ++source)
    total += fragment_bytes(payload_size(shape, model, event, source));
  return total;
}

// ---- SuperFragmentWriter -------------------------------------------------------------------------------

std::size_t SuperFragmentWriter::begin(const FragmentShape& shape, std::uint64_t event,
                                       std::uint32_t contributor) noexcept {
  shape_ = shape;
  const SizeModel model = size_model(shape);
  fixed_size_ = model.fixed;
  mu_ = model.mu;
  sigma_ = model.sigma;
  event_ = event;
  contributor_ = contributor;
  total_ = 0;
  for (std::uint32_t source = 0; source < shape.sources; ++source) {
    const std::uint32_t size = payload_size(shape, model, event, source);
    if (source < kKeptSizes) sizes_[source] = size;
    total_ += fragment_bytes(size);
  }
  written_ = 0;
  source_ = 0;
  if (shape.sources != 0) start_source();
  return total_;
}

void SuperFragmentWriter::start_source() noexcept {
  if (source_ < kKeptSizes) {
    payload_size_ = sizes_[source_];
  } else {
    SizeModel model;
    model.fixed = fixed_size_;
    model.mu = mu_;
    model.sigma = sigma_;
    payload_size_ = payload_size(shape_, model, event_, source_);
  }
  position_ = 0;
  crc_ = ~std::uint32_t{0};
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
      if (shape_.pattern) crc_ = implementation().fill(at, position_ - kSourceHeaderBytes, n, pattern_seed_, crc_);
    } else if (position_ < padding_end) {
      n = std::min(free, padding_end - position_);
      if (shape_.pattern) std::memset(at, 0, n);
    } else {
      std::array<std::byte, kSourceTrailerBytes> trailer;
      detail::store_le<std::uint32_t>(trailer.data() + 0, shape_.pattern ? ~crc_ : 0u);
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

// ---- verify_superfragment ------------------------------------------------------------------------------

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
      cursor.consume(payload, [&crc](const std::byte* data, std::size_t size) { crc = crc32c(crc, data, size); });
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
