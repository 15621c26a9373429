// CRC-32C: slice-by-8 tables in software, three interleaved CRC32 instruction chains in hardware, chosen
// once by what the CPU offers (tests may switch).
#include "daqx/apps/crc32c.hpp"

#include <array>
#include <atomic>

#include "daqx/api/frame.hpp"

#if defined(__x86_64__) || defined(__i386__)
#include <nmmintrin.h>
#define DAQX_APPS_HAVE_SSE42_PATH 1
#endif

namespace daqx::apps {
namespace {

std::uint8_t pattern_byte(std::uint64_t seed, std::uint64_t offset) noexcept {
  return static_cast<std::uint8_t>((seed + (offset / 8) * kCounterPatternStep) >> (8 * (offset % 8)));
}

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
  std::uint64_t word = seed + ((offset + i) / 8) * kCounterPatternStep;
  for (; i + 8 <= size; i += 8, word += kCounterPatternStep) {
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

#ifdef DAQX_APPS_HAVE_SSE42_PATH
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
  std::uint64_t word = seed + ((offset + i) / 8) * kCounterPatternStep;
  constexpr std::uint64_t kStreamStep = kStreamWords * kCounterPatternStep;
  for (; i + 3 * kStreamBytes <= size; i += 3 * kStreamBytes, word += 3 * kStreamStep) {
    std::uint64_t b = 0;
    std::uint64_t c = 0;
    std::uint64_t word_a = word;
    for (std::size_t w = 0; w < kStreamBytes; w += 8, word_a += kCounterPatternStep) {
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
  for (; i + 8 <= size; i += 8, word += kCounterPatternStep) {
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
#ifdef DAQX_APPS_HAVE_SSE42_PATH
constexpr CrcImplementation kHardware{hardware_crc, hardware_fill};
#endif

bool hardware_available() noexcept {
  static const bool available = cpu_has_sse42();  // asked once
  return available;
}

const CrcImplementation* best_implementation() noexcept {
#ifdef DAQX_APPS_HAVE_SSE42_PATH
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

}  // namespace

// Test hooks, declared where they are used (apps/evb/tests/fragment_test.cpp): both CRC-32C implementations
// on one machine.
namespace test_hooks {
bool crc32c_hardware_available() noexcept { return hardware_available(); }
// Selects the implementation crc32c() and crc32c_fill_pattern() use; returns whether hardware was in use
// before. hardware = true falls back to software when the CPU lacks SSE4.2.
bool use_crc32c_hardware(bool hardware) noexcept {
  const bool before = &implementation() != &kSoftware;
  selected.store(hardware ? best_implementation() : &kSoftware, std::memory_order_relaxed);
  return before;
}
}  // namespace test_hooks

std::uint32_t crc32c(std::uint32_t crc, const std::byte* data, std::size_t size) noexcept {
  return ~implementation().crc(~crc, data, size);
}

std::uint32_t crc32c_fill_pattern(std::byte* out, std::uint64_t offset, std::size_t size, std::uint64_t seed,
                                  std::uint32_t crc) noexcept {
  return ~implementation().fill(out, offset, size, seed, ~crc);
}

}  // namespace daqx::apps
