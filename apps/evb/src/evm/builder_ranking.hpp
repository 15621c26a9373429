// evb::evm::BuilderRanking, which BU gets the next batch: among the BUs holding credits, the highest priority first,
// and among equals the turn goes round from the one after the last chosen. Kept up to date as each BU changes
// (rank()), so choosing costs the same whatever the number of BUs: a set of BUs per priority level, each a
// two-level bitmap (find the next member from a position in a few word operations). Pure (no messaging).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace daqx::evb::evm {

class BuilderRanking {
 public:
  static constexpr std::uint16_t kHighestPriority = 255;  // the protocol's range; anything above ranks as 255

  // `builders` BUs (numbered 0..builders-1), none holding credits, the turn at the first.
  void reset(std::size_t builders);

  // Builder i holds credits at `priority`, or (nothing) holds none or does not take part.
  void rank(std::size_t builder, std::optional<std::uint16_t> priority);

  // The builder to serve now, or nothing when none holds credits; the turn moves past it.
  std::optional<std::size_t> choose();

  // The chosen builder did not take its batch (it waits for a fuller one): its turn again next time.
  void turn_again(std::size_t builder) { next_ = builder; }

 private:
  static constexpr std::size_t kLevels = std::size_t{kHighestPriority} + 1;
  static constexpr std::size_t kNone = static_cast<std::size_t>(-1);

  // The builders of one priority level: a bit per builder, and a bit per non-empty word of those.
  struct Level {
    std::vector<std::uint64_t> words;
    std::vector<std::uint64_t> summary;
    std::size_t members = 0;
  };
  void insert(std::size_t level, std::size_t builder);
  void erase(std::size_t level, std::size_t builder);
  // The first member at or after `from` in the level, or kNone.
  std::size_t first_from(const Level& level, std::size_t from) const;
  std::size_t highest_level() const;

  std::size_t builders_ = 0;
  std::size_t next_ = 0;  // where the turn starts
  std::vector<Level> levels_;
  std::array<std::uint64_t, kLevels / 64> occupied_{};  // a bit per non-empty level
  std::vector<std::int32_t> level_of_;                  // by builder: its level, or -1 when not ranked
};

}  // namespace daqx::evb::evm
