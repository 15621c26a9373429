// The EvM's choice of builder as a specification: the highest priority first, round-robin among equals, a BU
// without a free slot skipped, a filling BU's priority falling, and events numbered without gaps.
#include <catch2/catch.hpp>

#include <array>
#include <cstdint>
#include <optional>
#include <vector>

#include "bu/resource_manager.hpp"
#include "evm/event_assigner.hpp"

using namespace daqx::evb;

namespace {

// Builders as the EvM sees them: a priority each, or nothing when it holds no free slot.
using Builders = std::vector<std::optional<std::uint16_t>>;

std::vector<std::size_t> choices(EventAssigner& assigner, const Builders& builders, int n) {
  std::vector<std::size_t> chosen;
  for (int k = 0; k < n; ++k) {
    const std::optional<std::size_t> i =
        assigner.choose_builder(builders.size(), [&](std::size_t b) { return builders[b]; });
    REQUIRE(i.has_value());
    chosen.push_back(*i);
  }
  return chosen;
}

}  // namespace

TEST_CASE("the BU with the highest priority is served first", "[event_assigner]") {
  EventAssigner assigner;
  const Builders builders{std::uint16_t{10}, std::uint16_t{200}, std::uint16_t{100}};
  CHECK(choices(assigner, builders, 3) == std::vector<std::size_t>{1, 1, 1});
}

TEST_CASE("BUs of equal priority are served in turn", "[event_assigner]") {
  EventAssigner assigner;
  const Builders builders{std::uint16_t{50}, std::uint16_t{50}, std::uint16_t{50}};
  CHECK(choices(assigner, builders, 6) == std::vector<std::size_t>{0, 1, 2, 0, 1, 2});
}

TEST_CASE("the turn goes round only among the BUs of the highest priority", "[event_assigner]") {
  EventAssigner assigner;
  const Builders builders{std::uint16_t{255}, std::uint16_t{7}, std::uint16_t{255}, std::uint16_t{255}};
  CHECK(choices(assigner, builders, 6) == std::vector<std::size_t>{0, 2, 3, 0, 2, 3});
}

TEST_CASE("a BU without a free slot is never chosen, and with none free nobody is", "[event_assigner]") {
  EventAssigner assigner;
  Builders builders{std::nullopt, std::uint16_t{1}, std::nullopt};
  CHECK(choices(assigner, builders, 2) == std::vector<std::size_t>{1, 1});
  builders[1] = std::nullopt;
  CHECK_FALSE(assigner.choose_builder(builders.size(), [&](std::size_t b) { return builders[b]; }).has_value());
}

TEST_CASE("a BU given its turn back is chosen again next time", "[event_assigner]") {
  EventAssigner assigner;
  const Builders builders{std::uint16_t{5}, std::uint16_t{5}};
  CHECK(choices(assigner, builders, 1) == std::vector<std::size_t>{0});
  assigner.turn_again(0);
  CHECK(choices(assigner, builders, 2) == std::vector<std::size_t>{0, 1});
}

TEST_CASE("a filling BU's priority falls, so an emptier one is served first", "[event_assigner]") {
  CHECK(builder_priority(8, 0) == 255);
  std::uint16_t before = builder_priority(8, 0);
  for (std::uint32_t taken = 1; taken <= 8; ++taken) {
    const std::uint16_t now = builder_priority(8, taken);
    CHECK(now < before);
    before = now;
  }
  CHECK(builder_priority(8, 10) == 0);  // more taken than it has: still 0, not a wrap-around

  EventAssigner assigner;
  const Builders builders{builder_priority(8, 6), builder_priority(8, 1)};
  CHECK(choices(assigner, builders, 2) == std::vector<std::size_t>{1, 1});
}

TEST_CASE("events are numbered from 1 without gaps, again from 1 in a new run", "[event_assigner]") {
  EventAssigner assigner;
  CHECK(assigner.take(8) == 1);
  CHECK(assigner.take(3) == 9);
  CHECK(assigner.next_event() == 12);
  assigner.start_run();
  CHECK(assigner.take(1) == 1);
}

TEST_CASE("maxEvents and the trigger rate bound the events available", "[event_assigner]") {
  EventAssigner assigner;
  CHECK(assigner.events_available({}, 0) == UINT64_MAX);
  CHECK(assigner.events_available({10, 0}, 0) == 10);
  assigner.take(8);
  CHECK(assigner.events_available({10, 0}, 0) == 2);
  assigner.take(2);
  CHECK(assigner.events_available({10, 0}, 0) == 0);
  assigner.start_run();
  CHECK(assigner.events_available({0, 100}, 0.5) == 50);
  assigner.take(50);
  CHECK(assigner.events_available({0, 100}, 0.5) == 0);
}
