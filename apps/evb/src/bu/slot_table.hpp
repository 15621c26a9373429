// evb::bu::SlotTable, the one owner of the BU's resource slots (each a credit for one batch of events, holding the
// received blocks until the batch is built and output) and of whether the BU runs. The BU's parts (EvmProxy,
// EventAssembly, EventOutput) change the slots only through the operations named here for what each needs. A
// slot the output holds is the output's until it gives it back (finish): nothing here touches it between.
// Dispatch thread only, except that the output's worker reads the slots it holds.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "daqx/mempool/ref.hpp"

namespace daqx::evb::bu {

// One contributor's super-fragment of an event, as references into the received blocks (no copy).
struct Contribution {
  std::uint32_t size = 0;      // the super-fragment's size, from its first piece
  std::uint32_t received = 0;
  bool done = false;
  std::vector<std::span<const std::byte>> pieces;
  // For each piece, the index in its slot's blocks of the block that holds it: the stream makes views of them.
  std::vector<std::uint32_t> piece_blocks;
};

struct EventUnderConstruction {
  std::uint32_t contributions_done = 0;
  // Super-fragments still missing from contributors that are not down: built when it reaches 0, so completing
  // an event costs the same whatever the number of contributors.
  std::uint32_t awaited = 0;
  bool built = false;
  std::uint32_t flags = 0;
  std::vector<Contribution> contributions;  // by contributor index: EvM first, then the RUs
};

struct BuilderSlot {
  enum class State { free, offered, building, output } state = State::free;
  std::uint32_t run = 0;
  std::uint32_t generation = 0;  // when offered
  std::uint64_t first_event = 0;
  std::uint64_t finished_first = 0;  // first event of the last batch this slot finished in this run
  std::uint32_t count = 0;
  std::uint32_t built = 0;
  std::uint32_t incomplete = 0;
  std::uint32_t corrupt = 0;
  std::chrono::steady_clock::time_point first_data{};
  std::vector<EventUnderConstruction> events;  // capacity kept between batches
  std::vector<mem::Ref> blocks;                // every block holding this batch's pieces
};

class SlotTable {
 public:
  // How the slots are used now, in one pass.
  struct Occupancy {
    std::uint32_t offered = 0;
    std::uint32_t building = 0;
    std::uint32_t in_output = 0;
    std::uint64_t blocks_held = 0;  // by slots offered or building (the output's are counted as it writes)
  };

  // Configure: `slots` free slots, none holding anything; not running.
  void configure(std::uint32_t slots);
  // Between enable and stop, halt or a failure: requests, blocks and the EvM's news are taken only then.
  bool running() const noexcept { return running_; }
  void start() noexcept { running_ = true; }
  void stop() noexcept { running_ = false; }

  std::uint32_t size() const noexcept { return static_cast<std::uint32_t>(slots_.size()); }
  bool contains(std::uint32_t index) const noexcept { return index < slots_.size(); }
  BuilderSlot& slot(std::uint32_t index) noexcept { return slots_[index]; }
  const BuilderSlot& slot(std::uint32_t index) const noexcept { return slots_[index]; }
  std::uint32_t index_of(const BuilderSlot& slot) const noexcept {
    return static_cast<std::uint32_t>(&slot - slots_.data());
  }
  Occupancy occupancy() const noexcept;

  // The free slots a request may offer, lowest first, at most `count` (appended to `out`).
  void collect_free(std::uint32_t count, std::vector<std::uint32_t>& out) const;
  // A request offering these slots went out for run and generation: they wait for a batch.
  void offer(const std::vector<std::uint32_t>& indices, std::uint32_t run, std::uint32_t generation) noexcept;
  // Every slot not with the output is free again and lets its blocks go; returns the events of the slots being
  // built that were not built (abandoned).
  std::uint64_t abandon() noexcept;
  // A new run (or enable): no slot has finished a batch of it.
  void new_run() noexcept;
  // The output is done with the slot (or discarded its batch): free again, its blocks let go. In the EvM's
  // current run its batch is remembered as finished, so a late block of it is stale.
  void finish(std::uint32_t index, bool current_run) noexcept;
  // The slot's batch is built: the bytes its blocks hold feed the batch size the memory budget counts with.
  void learn_batch_size(std::uint32_t index) noexcept;
  // Received block bytes of a batch, the largest recent (resource_manager.hpp); 0: no batch built yet.
  std::uint64_t batch_bytes() const noexcept { return batch_bytes_; }
  void forget_batch_size() noexcept { batch_bytes_ = 0; }

  // fn(slot) for every slot whose batch is being built (an RU went down: its events may be complete now).
  template <class Fn>
  void for_each_building(Fn&& fn) {
    for (BuilderSlot& s : slots_)
      if (s.state == BuilderSlot::State::building) fn(s);
  }

 private:
  std::vector<BuilderSlot> slots_;
  bool running_ = false;
  std::uint64_t batch_bytes_ = 0;
};

}  // namespace daqx::evb::bu
