// The BU's event assembly as a specification, on its own: fed the very blocks the EvM and the RUs send (real
// fragment senders, synthetic data the assembly checks), with the BU's slot table and its proxy of the EvM, in a
// context that fails the test if anything is sent (assembly answers nobody). An event is built once every
// contributor that is not down gave its super-fragment, exactly once; an RU down builds what waited only for it,
// flagged incomplete; blocks of another generation, of a slot not offered, or of a batch already finished are
// refused and counted.
#include <catch2/catch.hpp>

#include <cstdint>
#include <vector>

#include "bu/event_assembly.hpp"
#include "bu/evm_proxy.hpp"
#include "bu/slot_table.hpp"
#include "common/outbox.hpp"
#include "contributor_peers.hpp"
#include "idle_context.hpp"
#include "recording_context.hpp"
#include "unit_fixtures.hpp"

using namespace daqx;
using namespace daqx::evb;
using namespace daqx::evb::test;
using namespace daqx::evb::bu;

namespace {

constexpr Tid kBu = 3000;

BuConfiguration configuration() {
  BuConfiguration c;
  c.evm = kEvm;
  c.rus = {1001, 1002};
  c.slots = 4;
  return c;
}

// The assembly of a BU with the EvM and two RUs, in run kRun and generation kGeneration, slots 0 and 1 offered.
struct Assembly {
  test::ContributorPeers peers{{kEvm, 1001, 1002}, kRun};  // first: the slots hold its blocks until they go
  test::IdleContext context;  // assembly sends nothing: a frame allocated or sent fails the test
  Outbox outbox{context};
  BuConfiguration config = configuration();
  std::vector<Tid> contributors = peers.contributors();
  SlotTable slots;
  EvmProxy evm{config, outbox, context, slots};
  std::vector<std::uint32_t> built;  // the slots whose every event was built, in order
  EventAssembly assembly{config, context, slots, contributors, evm, [this](std::uint32_t index) { built.push_back(index); }};

  Assembly() {
    slots.configure(config.slots);
    evm.new_run(kRun);
    evm.take_reset(kGeneration);  // the table does not run: the proxy requests nothing
    assembly.start();
    slots.offer({0, 1}, kRun, kGeneration);
  }

  // Contributor c (0: the EvM) sends its super-fragments of the batch.
  void give(std::size_t c, const Assignment& batch) {
    for (mem::Ref& block : peers.blocks(c, batch))
      assembly.take_block(c, test::RecordingContext::received(function::fragments, kBu, peers.tid(c), std::move(block)));
  }
  std::uint64_t count(const Counter& c) const { return c.load(); }
  const EventAssembly::Counts& counts() const { return assembly.counts(); }
};

const Assignment kBatch{kBu, kGeneration, 0, 2, 1};  // slot 0, events 1 and 2

}  // namespace

TEST_CASE("assembly: an event is built once every contributor gave its super-fragment, not before, and checks whole",
          "[bu][assembly]") {
  Assembly a;
  a.give(0, kBatch);
  a.give(1, kBatch);
  CHECK(a.built.empty());
  CHECK(a.count(a.counts().events_built) == 0);
  CHECK(a.slots.slot(0).state == BuilderSlot::State::building);
  a.give(2, kBatch);
  CHECK(a.built == std::vector<std::uint32_t>{0});
  CHECK(a.count(a.counts().events_built) == 2);
  CHECK(a.count(a.counts().fragments_received) == 6);
  CHECK(a.count(a.counts().events_incomplete) == 0);
  CHECK(a.count(a.counts().events_corrupt) == 0);
  CHECK(a.count(a.counts().protocol_errors) == 0);
  CHECK(a.slots.slot(0).built == 2);
}

TEST_CASE("assembly: an RU down builds the events that waited only for it, flagged incomplete, and later batches "
          "do not wait for it",
          "[bu][assembly]") {
  Assembly a;
  a.give(0, kBatch);
  a.give(1, kBatch);
  a.assembly.contributor_down(2);
  CHECK(a.built == std::vector<std::uint32_t>{0});
  CHECK(a.count(a.counts().events_incomplete) == 2);
  CHECK(a.slots.slot(0).incomplete == 2);
  const Assignment next{kBu, kGeneration, 1, 3, 3};
  a.give(0, next);
  a.give(1, next);
  CHECK(a.built == std::vector<std::uint32_t>{0, 1});
  CHECK(a.count(a.counts().events_built) == 5);
  CHECK(a.count(a.counts().events_incomplete) == 5);
  CHECK(a.count(a.counts().events_corrupt) == 0);
}

TEST_CASE("assembly: a contributor's super-fragment sent twice is counted duplicate and the event built once",
          "[bu][assembly]") {
  Assembly a;
  a.give(1, kBatch);
  a.give(1, kBatch);
  CHECK(a.count(a.counts().duplicate_pieces) == 2);
  a.give(0, kBatch);
  a.give(2, kBatch);
  CHECK(a.built == std::vector<std::uint32_t>{0});
  CHECK(a.count(a.counts().events_built) == 2);
  CHECK(a.count(a.counts().fragments_received) == 6);
}

TEST_CASE("assembly: blocks of another generation are stale, a batch for a slot not offered is a protocol error",
          "[bu][assembly]") {
  Assembly a;
  a.give(1, {kBu, kGeneration + 1, 0, 2, 1});
  CHECK(a.count(a.counts().stale_blocks) == 1);
  a.give(1, {kBu, kGeneration, 2, 2, 1});  // slot 2 was never offered
  CHECK(a.count(a.counts().protocol_errors) == 1);
  CHECK(a.slots.slot(0).state == BuilderSlot::State::offered);
  CHECK(a.slots.slot(2).state == BuilderSlot::State::free);
  CHECK(a.count(a.counts().blocks_received) == 0);
  CHECK(a.built.empty());
}

TEST_CASE("assembly: a late block of a batch its slot already finished is stale, not the start of a new batch",
          "[bu][assembly]") {
  Assembly a;
  for (std::size_t c = 0; c < 3; ++c) a.give(c, kBatch);
  REQUIRE(a.built == std::vector<std::uint32_t>{0});
  a.slots.finish(0, true);
  a.slots.offer({0}, kRun, kGeneration);
  a.give(2, kBatch);
  CHECK(a.count(a.counts().stale_blocks) == 1);
  CHECK(a.slots.slot(0).state == BuilderSlot::State::offered);
}
