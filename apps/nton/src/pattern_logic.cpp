// Fills and verifies the test pattern, word by word, across the blocks of a chain.
#include "pattern_logic.hpp"

#include "chain_logic.hpp"
#include "daqx/api/frame.hpp"
#include "daqx/apps/splitmix64.hpp"

namespace daqx::nton {
namespace {

using apps::splitmix64;

std::uint64_t pattern_word(std::uint64_t seed, std::uint64_t index) noexcept { return seed + index * kPatternStep; }

std::byte pattern_byte(std::uint64_t seed, std::uint64_t position) noexcept {
  return static_cast<std::byte>(pattern_word(seed, position / 8) >> (8 * (position % 8)));
}

}  // namespace

std::uint64_t pattern_seed(std::uint32_t sender, std::uint64_t sequence) noexcept {
  return splitmix64(sequence ^ splitmix64(sender));
}

void fill_pattern(std::span<std::byte> bytes, std::uint64_t position, std::uint64_t seed) noexcept {
  std::size_t i = 0;
  const std::size_t n = bytes.size();
  // Piece boundaries fall anywhere in a chain: bytes up to the next word of the pattern one at a time.
  for (; i < n && (position + i) % 8 != 0; ++i) bytes[i] = pattern_byte(seed, position + i);
  std::uint64_t word = pattern_word(seed, (position + i) / 8);
  for (; i + 8 <= n; i += 8, word += kPatternStep) detail::store_le<std::uint64_t>(bytes.data() + i, word);
  for (; i < n; ++i) bytes[i] = pattern_byte(seed, position + i);
}

bool verify_pattern(std::span<const std::byte> bytes, std::uint64_t position, std::uint64_t seed) noexcept {
  std::size_t i = 0;
  const std::size_t n = bytes.size();
  bool same = true;
  for (; i < n && (position + i) % 8 != 0; ++i) same = same && bytes[i] == pattern_byte(seed, position + i);
  // No early exit in the bulk loop: an accumulated difference keeps it branch-free and vectorisable.
  std::uint64_t difference = 0;
  std::uint64_t word = pattern_word(seed, (position + i) / 8);
  for (; i + 8 <= n; i += 8, word += kPatternStep) difference |= detail::load_le<std::uint64_t>(bytes.data() + i) ^ word;
  for (; i < n; ++i) same = same && bytes[i] == pattern_byte(seed, position + i);
  return same && difference == 0;
}

bool fill_pattern(const mem::Block* head, std::size_t offset, std::size_t length, std::uint64_t seed) noexcept {
  return for_each_piece(head, offset, length, [seed](std::span<std::byte> piece, std::size_t position) {
           fill_pattern(piece, position, seed);
         }) == length;
}

bool verify_pattern(const mem::Block* head, std::size_t offset, std::size_t length, std::uint64_t seed) noexcept {
  bool same = true;
  const std::size_t visited = for_each_piece(head, offset, length, [&same, seed](std::span<std::byte> piece, std::size_t position) {
    same = verify_pattern(std::span<const std::byte>(piece), position, seed) && same;
  });
  return same && visited == length;
}

}  // namespace daqx::nton
