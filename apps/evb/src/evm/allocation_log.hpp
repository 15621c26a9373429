// evb::evm::AllocationLog, the assignments of a run that the RUs are to be told, in the order the EvM made them: one
// log shared by every RU, each RU proxy holding how far it has been told (a position), so an assignment costs one
// entry whatever the number of RUs; the Allocate frames then go to each RU from its position. Dispatch thread only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "daqx/evb/protocol.hpp"

namespace daqx::evb::evm {

class AllocationLog {
 public:
  // Counts the assignments added in this run (so positions stay valid when the told ones are let go).
  using Position = std::uint64_t;

  // A new run: nothing to tell.
  void clear() noexcept {
    entries_.clear();
    first_ = 0;
    forgotten_.clear();
  }
  void add(const Assignment& assignment) { entries_.push_back(assignment); }
  Position end() const noexcept { return first_ + entries_.size(); }
  // What a reader at `from` has not been told yet (from at or after the oldest reader's position).
  std::span<const Assignment> since(Position from) const noexcept {
    return std::span<const Assignment>(entries_).subspan(static_cast<std::size_t>(from - first_));
  }

  // Every reader that takes part is at or past `oldest`: what lies before is let go.
  void release_before(Position oldest);

  // A dropped BU: its assignments not yet told to every reader are taken out (as each RU forgot its queued ones).
  // Each reader's position then moves to where() of it.
  void forget_bu(Tid bu);
  Position where(Position before_forget) const noexcept;

 private:
  std::vector<Assignment> entries_;  // from position first_
  Position first_ = 0;
  std::vector<Position> forgotten_;  // positions taken out by the last forget_bu, ascending
};

}  // namespace daqx::evb::evm
