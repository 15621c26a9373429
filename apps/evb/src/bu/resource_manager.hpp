// The BU's resources: its slots (each a credit for one batch of events, holding the received blocks until the
// batch is built and output), how many of them may be offered given the output's backlog and the memory
// budget, and the priority the BU asks the EvM for.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "bu/bu_configuration.hpp"
#include "daqx/mempool/ref.hpp"

namespace daqx::evb::bu {

// One contributor's super-fragment of an event, as references into the received blocks (no copy).
struct Contribution {
  std::uint32_t size = 0;      // the super-fragment's size, from its first piece
  std::uint32_t received = 0;
  bool done = false;
  std::vector<std::span<const std::byte>> pieces;
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

// The BU's priority for the EvM, 0 to 255: highest with every slot free, falling as slots fill (offered,
// building or waiting for the output), so the EvM favours the emptiest BUs.
std::uint16_t builder_priority(std::uint32_t total_slots, std::uint32_t slots_in_use) noexcept;

// How many slots may be offered or building now, and the output state the EvM is told.
struct SlotLimit {
  std::uint16_t output_state = 0;  // evb::output_state
  std::uint32_t slots = 0;
};
// The output's backlog throttles (a quarter of the slots) then blocks (none); the memory budget allows as many
// slots as batches of batch_bytes fit in it, or two while batch_bytes is 0 (no batch built yet).
SlotLimit slot_limit(const BuConfiguration& config, std::uint32_t total_slots, std::uint32_t slots_in_output,
                     std::uint64_t batch_bytes) noexcept;

// The batch size the memory budget counts with after a batch that held `held` bytes: the largest recent batch,
// decaying slowly, so one small batch does not open the gates to big ones.
std::uint64_t recent_batch_bytes(std::uint64_t previous, std::uint64_t held) noexcept;

}  // namespace daqx::evb::bu
