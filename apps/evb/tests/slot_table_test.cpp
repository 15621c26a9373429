// The BU's slot table as a specification: which slots a request offers, what abandoning and finishing a slot
// let go of, what a slot with the output keeps, and the batch size the memory budget learns from built slots.
#include <catch2/catch.hpp>

#include <cstdint>
#include <vector>

#include "bu/slot_table.hpp"
#include "daqx/mempool/allocator.hpp"
#include "daqx/mempool/pool.hpp"

using namespace daqx;
using namespace daqx::evb::bu;

namespace {

using State = BuilderSlot::State;

// A slot table of `slots` slots and a pool for the blocks its slots hold.
struct Table {
  mem::Pool pool{mem::PoolConfig::geometric("slot-table-test", 256, 1u << 20, 4u << 20, std::size_t{64} << 20),
                 mem::make_allocator("heap")};
  SlotTable table;

  explicit Table(std::uint32_t slots) { table.configure(slots); }

  std::vector<mem::Ref> blocks(std::size_t n, std::size_t bytes) {
    std::vector<mem::Ref> out;
    for (std::size_t i = 0; i < n; ++i) out.push_back(pool.allocate_chain(bytes));
    return out;
  }
  // Slot `index` builds a batch of `count` events from first_event, `built` of them built, holding `held` blocks.
  void building(std::uint32_t index, std::uint64_t first_event, std::uint32_t count, std::uint32_t built,
                std::size_t held = 0) {
    BuilderSlot& s = table.slot(index);
    s.state = State::building;
    s.first_event = first_event;
    s.count = count;
    s.built = built;
    s.blocks = blocks(held, 4096);
  }
};

}  // namespace

TEST_CASE("a configured slot table has every slot free and does not run until started", "[bu][slot_table]") {
  Table t(4);
  SlotTable& table = t.table;
  CHECK(table.size() == 4);
  CHECK_FALSE(table.running());
  CHECK_FALSE(table.contains(4));
  const SlotTable::Occupancy o = table.occupancy();
  CHECK(o.offered + o.building + o.in_output == 0);
  table.start();
  CHECK(table.running());
  table.stop();
  CHECK_FALSE(table.running());
}

TEST_CASE("a request offers free slots lowest first, no more than asked, each marked with its run and generation",
          "[bu][slot_table]") {
  Table t(5);
  SlotTable& table = t.table;
  table.slot(1).state = State::output;
  std::vector<std::uint32_t> free;
  table.collect_free(3, free);
  CHECK(free == std::vector<std::uint32_t>{0, 2, 3});
  table.offer(free, 7, 0x70001);
  CHECK(table.occupancy().offered == 3);
  CHECK(table.slot(2).state == State::offered);
  CHECK(table.slot(2).run == 7);
  CHECK(table.slot(2).generation == 0x70001);
  std::vector<std::uint32_t> rest;
  table.collect_free(3, rest);
  CHECK(rest == std::vector<std::uint32_t>{4});  // the offered and the output's are not free
}

TEST_CASE("abandoning lets every slot but the output's go, counting the unbuilt events of those being built",
          "[bu][slot_table]") {
  Table t(3);
  SlotTable& table = t.table;
  t.building(0, 1, 8, 3, 2);
  table.slot(1).state = State::output;
  table.slot(1).blocks = t.blocks(1, 4096);
  table.slot(2).state = State::offered;
  CHECK(table.occupancy().blocks_held == 2);  // the output's block is the output's to count
  CHECK(table.abandon() == 5);
  CHECK(table.slot(0).state == State::free);
  CHECK(table.slot(0).blocks.empty());
  CHECK(table.slot(2).state == State::free);
  CHECK(table.slot(1).state == State::output);  // the output gives it back when it is done
  CHECK(table.slot(1).blocks.size() == 1);
  CHECK(t.pool.stats().blocks_used() == 1);
}

TEST_CASE("a finished slot is free again, and remembers its batch as finished only in the EvM's current run",
          "[bu][slot_table]") {
  Table t(2);
  SlotTable& table = t.table;
  t.building(0, 41, 8, 8, 1);
  table.slot(0).state = State::output;
  table.finish(0, true);
  CHECK(table.slot(0).state == State::free);
  CHECK(table.slot(0).finished_first == 41);
  CHECK(t.pool.stats().blocks_used() == 0);
  t.building(1, 9, 8, 8);
  table.finish(1, false);  // a batch of a run that is over: nothing to remember of it in this one
  CHECK(table.slot(1).finished_first == 0);
  table.new_run();
  CHECK(table.slot(0).finished_first == 0);
}

TEST_CASE("the batch size the memory budget counts with is the largest recent batch's blocks, decaying slowly",
          "[bu][slot_table]") {
  Table t(2);
  SlotTable& table = t.table;
  CHECK(table.batch_bytes() == 0);
  t.building(0, 1, 8, 8);
  table.slot(0).blocks = t.blocks(4, 65536);
  std::uint64_t held = 0;
  for (const mem::Ref& b : table.slot(0).blocks) held += b.capacity();
  table.learn_batch_size(0);
  CHECK(table.batch_bytes() == held);
  t.building(1, 9, 8, 8, 1);  // one small batch does not open the gates
  table.learn_batch_size(1);
  CHECK(table.batch_bytes() == held - held / 64);
  table.forget_batch_size();
  CHECK(table.batch_bytes() == 0);
}
