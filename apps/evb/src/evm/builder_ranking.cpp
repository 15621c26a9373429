// evb::evm::BuilderRanking (builder_ranking.hpp): the bitmaps per priority level and the search for the next turn.
#include "evm/builder_ranking.hpp"

#include <algorithm>
#include <bit>

namespace daqx::evb::evm {
namespace {
constexpr std::size_t kBits = 64;
}

void BuilderRanking::reset(std::size_t builders) {
  builders_ = builders;
  next_ = 0;
  const std::size_t words = (builders + kBits - 1) / kBits;
  const std::size_t summary = (words + kBits - 1) / kBits;
  levels_.assign(kLevels, Level{});
  for (Level& level : levels_) {
    level.words.assign(words, 0);
    level.summary.assign(summary, 0);
  }
  occupied_.fill(0);
  level_of_.assign(builders, -1);
}

void BuilderRanking::rank(std::size_t builder, std::optional<std::uint16_t> priority) {
  if (builder >= builders_) return;
  const std::int32_t wanted = priority ? std::min<std::int32_t>(*priority, kHighestPriority) : -1;
  const std::int32_t now = level_of_[builder];
  if (wanted == now) return;
  if (now >= 0) erase(static_cast<std::size_t>(now), builder);
  if (wanted >= 0) insert(static_cast<std::size_t>(wanted), builder);
  level_of_[builder] = wanted;
}

void BuilderRanking::insert(std::size_t level, std::size_t builder) {
  Level& l = levels_[level];
  const std::size_t word = builder / kBits;
  if (l.words[word] == 0) l.summary[word / kBits] |= std::uint64_t{1} << (word % kBits);
  l.words[word] |= std::uint64_t{1} << (builder % kBits);
  if (l.members++ == 0) occupied_[level / kBits] |= std::uint64_t{1} << (level % kBits);
}

void BuilderRanking::erase(std::size_t level, std::size_t builder) {
  Level& l = levels_[level];
  const std::size_t word = builder / kBits;
  l.words[word] &= ~(std::uint64_t{1} << (builder % kBits));
  if (l.words[word] == 0) l.summary[word / kBits] &= ~(std::uint64_t{1} << (word % kBits));
  if (--l.members == 0) occupied_[level / kBits] &= ~(std::uint64_t{1} << (level % kBits));
}

std::size_t BuilderRanking::highest_level() const {
  for (std::size_t i = occupied_.size(); i-- > 0;)
    if (occupied_[i] != 0) return i * kBits + (kBits - 1 - static_cast<std::size_t>(std::countl_zero(occupied_[i])));
  return kNone;
}

// Within the word of `from`, then through the summary (one bit per word: 4096 builders per summary word).
std::size_t BuilderRanking::first_from(const Level& l, std::size_t from) const {
  if (from >= builders_) return kNone;
  std::size_t word = from / kBits;
  const std::uint64_t here = l.words[word] & (~std::uint64_t{0} << (from % kBits));
  if (here != 0) return word * kBits + static_cast<std::size_t>(std::countr_zero(here));
  ++word;
  for (std::size_t s = word / kBits; s < l.summary.size(); ++s) {
    std::uint64_t bits = l.summary[s];
    if (s == word / kBits) bits &= word % kBits == 0 ? ~std::uint64_t{0} : ~std::uint64_t{0} << (word % kBits);
    if (bits == 0) continue;
    const std::size_t w = s * kBits + static_cast<std::size_t>(std::countr_zero(bits));
    return w * kBits + static_cast<std::size_t>(std::countr_zero(l.words[w]));
  }
  return kNone;
}

std::optional<std::size_t> BuilderRanking::choose() {
  const std::size_t level = highest_level();
  if (level == kNone) return std::nullopt;
  const Level& l = levels_[level];
  std::size_t chosen = first_from(l, next_);
  if (chosen == kNone) chosen = first_from(l, 0);  // round the end: from the first
  next_ = (chosen + 1) % builders_;
  return chosen;
}

}  // namespace daqx::evb::evm
