// evb::bu::SlotTable (slot_table.hpp): the slots' changes of state.
#include "bu/slot_table.hpp"

#include <algorithm>

#include "bu/resource_manager.hpp"

namespace daqx::evb::bu {

void SlotTable::configure(std::uint32_t slots) {
  running_ = false;
  slots_.clear();
  slots_.resize(slots);
  batch_bytes_ = 0;
}

SlotTable::Occupancy SlotTable::occupancy() const noexcept {
  Occupancy o;
  for (const BuilderSlot& s : slots_) {
    if (s.state == BuilderSlot::State::offered) ++o.offered;
    if (s.state == BuilderSlot::State::building) ++o.building;
    if (s.state == BuilderSlot::State::output) ++o.in_output;
    if (s.state != BuilderSlot::State::output) o.blocks_held += s.blocks.size();
  }
  return o;
}

void SlotTable::collect_free(std::uint32_t count, std::vector<std::uint32_t>& out) const {
  for (std::uint32_t i = 0; i < slots_.size() && count != 0; ++i)
    if (slots_[i].state == BuilderSlot::State::free) {
      out.push_back(i);
      --count;
    }
}

void SlotTable::offer(const std::vector<std::uint32_t>& indices, std::uint32_t run, std::uint32_t generation) noexcept {
  for (std::uint32_t i : indices) {
    slots_[i].state = BuilderSlot::State::offered;
    slots_[i].run = run;
    slots_[i].generation = generation;
  }
}

std::uint64_t SlotTable::abandon() noexcept {
  std::uint64_t abandoned = 0;
  for (BuilderSlot& s : slots_) {
    if (s.state == BuilderSlot::State::output) continue;
    if (s.state == BuilderSlot::State::building) abandoned += s.count - s.built;
    s.state = BuilderSlot::State::free;
    s.blocks.clear();
    s.count = 0;
  }
  return abandoned;
}

void SlotTable::new_run() noexcept {
  for (BuilderSlot& s : slots_) s.finished_first = 0;
}

void SlotTable::finish(std::uint32_t index, bool current_run) noexcept {
  BuilderSlot& s = slots_[index];
  if (current_run) s.finished_first = std::max(s.finished_first, s.first_event);
  s.state = BuilderSlot::State::free;
  s.blocks.clear();
  s.count = 0;
}

void SlotTable::learn_batch_size(std::uint32_t index) noexcept {
  std::uint64_t held = 0;
  for (const mem::Ref& block : slots_[index].blocks) held += block.capacity();
  batch_bytes_ = recent_batch_bytes(batch_bytes_, held);
}

}  // namespace daqx::evb::bu
