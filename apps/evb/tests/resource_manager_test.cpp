// The BU's resources as a specification: the priority it asks the EvM for, and how many slots it may offer.
#include <catch2/catch.hpp>

#include <cstdint>

#include "bu/resource_manager.hpp"
#include "daqx/evb/protocol.hpp"

using namespace daqx::evb;
using namespace daqx::evb::bu;

TEST_CASE("a filling BU's priority falls, from 255 with every slot free to 0 with none", "[bu][resources]") {
  constexpr std::uint32_t kSlots = 16;
  CHECK(builder_priority(kSlots, 0) == 255);
  for (std::uint32_t in_use = 1; in_use <= kSlots; ++in_use)
    CHECK(builder_priority(kSlots, in_use) < builder_priority(kSlots, in_use - 1));
  CHECK(builder_priority(kSlots, kSlots) == 0);
}

TEST_CASE("a BU's output backlog throttles its offers to a quarter of the slots, then blocks them",
          "[bu][resources]") {
  BuConfiguration config;
  config.output = OutputKind::file;
  constexpr std::uint64_t kSmallBatch = 1;  // the memory budget allows every slot
  CHECK(slot_limit(config, 16, 0, kSmallBatch).output_state == output_state::running);
  CHECK(slot_limit(config, 16, 0, kSmallBatch).slots == 16);
  CHECK(slot_limit(config, 16, 8, kSmallBatch).output_state == output_state::throttled);
  CHECK(slot_limit(config, 16, 8, kSmallBatch).slots == 4);
  CHECK(slot_limit(config, 16, 15, kSmallBatch).output_state == output_state::blocked);
  CHECK(slot_limit(config, 16, 15, kSmallBatch).slots == 0);
}

TEST_CASE("a BU offers two slots until a batch has shown its size, then as many as the memory budget holds",
          "[bu][resources]") {
  BuConfiguration config;
  config.memory_budget = 100;
  CHECK(slot_limit(config, 16, 0, 0).slots == 2);
  CHECK(slot_limit(config, 16, 0, 25).slots == 4);
  CHECK(slot_limit(config, 16, 0, 1000).slots == 1);
}
