// The EvM's choice of builder as a specification: the highest priority first, round-robin among equals, a BU
// without a free slot skipped, a filling BU's priority falling; and, at 512 and 5000 BUs, the same choices as a
// scan of every BU would make.
#include <catch2/catch.hpp>

#include <cstdint>
#include <optional>
#include <random>
#include <vector>

#include "bu/resource_manager.hpp"
#include "evm/builder_ranking.hpp"

using namespace daqx::evb;
using namespace daqx::evb::evm;
using daqx::evb::bu::builder_priority;

namespace {

// Builders as the EvM sees them: a priority each, or nothing when it holds no free slot.
using Builders = std::vector<std::optional<std::uint16_t>>;

// The ranking told where every builder stands now (as the EvM tells it after each change).
void rank_all(BuilderRanking& ranking, const Builders& builders) {
  for (std::size_t b = 0; b < builders.size(); ++b) ranking.rank(b, builders[b]);
}

BuilderRanking ranking_of(const Builders& builders) {
  BuilderRanking ranking;
  ranking.reset(builders.size());
  rank_all(ranking, builders);
  return ranking;
}

std::vector<std::size_t> choices(BuilderRanking& ranking, const Builders& builders, int n) {
  rank_all(ranking, builders);
  std::vector<std::size_t> chosen;
  for (int k = 0; k < n; ++k) {
    const std::optional<std::size_t> i = ranking.choose();
    REQUIRE(i.has_value());
    chosen.push_back(*i);
  }
  return chosen;
}

// The rule written as a scan of every builder from the turn: what the ranking must agree with.
struct ScanningChoice {
  std::size_t next = 0;
  std::optional<std::size_t> choose(const Builders& builders) {
    std::optional<std::size_t> best;
    std::uint16_t best_priority = 0;
    for (std::size_t k = 0; k < builders.size(); ++k) {
      const std::size_t i = (next + k) % builders.size();
      if (!builders[i]) continue;
      const std::uint16_t p = std::min<std::uint16_t>(*builders[i], 255);
      if (!best || p > best_priority) {
        best = i;
        best_priority = p;
      }
    }
    if (best) next = (*best + 1) % builders.size();
    return best;
  }
};

}  // namespace

TEST_CASE("the BU with the highest priority is served first", "[builder_ranking]") {
  const Builders builders{std::uint16_t{10}, std::uint16_t{200}, std::uint16_t{100}};
  BuilderRanking ranking = ranking_of(builders);
  CHECK(choices(ranking, builders, 3) == std::vector<std::size_t>{1, 1, 1});
}

TEST_CASE("BUs of equal priority are served in turn", "[builder_ranking]") {
  const Builders builders{std::uint16_t{50}, std::uint16_t{50}, std::uint16_t{50}};
  BuilderRanking ranking = ranking_of(builders);
  CHECK(choices(ranking, builders, 6) == std::vector<std::size_t>{0, 1, 2, 0, 1, 2});
}

TEST_CASE("the turn goes round only among the BUs of the highest priority", "[builder_ranking]") {
  const Builders builders{std::uint16_t{255}, std::uint16_t{7}, std::uint16_t{255}, std::uint16_t{255}};
  BuilderRanking ranking = ranking_of(builders);
  CHECK(choices(ranking, builders, 6) == std::vector<std::size_t>{0, 2, 3, 0, 2, 3});
}

TEST_CASE("a BU without a free slot is never chosen, and with none free nobody is", "[builder_ranking]") {
  Builders builders{std::nullopt, std::uint16_t{1}, std::nullopt};
  BuilderRanking ranking = ranking_of(builders);
  CHECK(choices(ranking, builders, 2) == std::vector<std::size_t>{1, 1});
  builders[1] = std::nullopt;
  rank_all(ranking, builders);
  CHECK_FALSE(ranking.choose().has_value());
}

TEST_CASE("a BU given its turn back is chosen again next time", "[builder_ranking]") {
  const Builders builders{std::uint16_t{5}, std::uint16_t{5}};
  BuilderRanking ranking = ranking_of(builders);
  CHECK(choices(ranking, builders, 1) == std::vector<std::size_t>{0});
  ranking.turn_again(0);
  CHECK(choices(ranking, builders, 2) == std::vector<std::size_t>{0, 1});
}

TEST_CASE("a filling BU's priority falls, so an emptier one is served first", "[builder_ranking]") {
  CHECK(builder_priority(8, 0) == 255);
  std::uint16_t before = builder_priority(8, 0);
  for (std::uint32_t taken = 1; taken <= 8; ++taken) {
    const std::uint16_t now = builder_priority(8, taken);
    CHECK(now < before);
    before = now;
  }
  CHECK(builder_priority(8, 10) == 0);  // more taken than it has: still 0, not a wrap-around

  const Builders builders{builder_priority(8, 6), builder_priority(8, 1)};
  BuilderRanking ranking = ranking_of(builders);
  CHECK(choices(ranking, builders, 2) == std::vector<std::size_t>{1, 1});
}

TEST_CASE("with hundreds and thousands of BUs whose credits and priorities change, the ranking chooses as a scan "
          "of every BU would",
          "[builder_ranking]") {
  for (const std::size_t count : {std::size_t{512}, std::size_t{5000}}) {
    std::mt19937 random(static_cast<std::uint32_t>(count));
    Builders builders(count);
    BuilderRanking ranking;
    ranking.reset(count);
    ScanningChoice scan;
    for (int step = 0; step < 20000; ++step) {
      // A few BUs change (a request, a credit used up, a drop), then one batch is assigned.
      for (int changes = static_cast<int>(random() % 4); changes-- > 0;) {
        const std::size_t b = random() % count;
        const std::uint32_t roll = random() % 8;
        // Few levels, so equals are common; now and then a priority above the protocol's 255.
        builders[b] = roll == 0 ? std::nullopt : std::optional<std::uint16_t>(roll == 7 ? 300 : 250 + roll % 3);
        ranking.rank(b, builders[b]);
      }
      if (step % 97 == 0) {  // a BU waits for a fuller batch: its turn again
        const std::size_t b = random() % count;
        ranking.turn_again(b);
        scan.next = b;
      }
      const std::optional<std::size_t> expected = scan.choose(builders);
      const std::optional<std::size_t> chosen = ranking.choose();
      REQUIRE(chosen == expected);
    }
  }
}
