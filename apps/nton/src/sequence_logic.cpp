// Sequence checks per sender and the receiver's table of senders.
#include "sequence_logic.hpp"

#include <algorithm>

namespace daqx::nton {

SequenceCheck SequenceTracker::accept(std::uint32_t run, std::uint64_t sequence) noexcept {
  if (!started_ || run != run_) {
    started_ = true;
    run_ = run;
    expected_ = 1;
    highest_ = 0;
  }
  highest_ = std::max(highest_, sequence);
  if (sequence == expected_) {
    ++expected_;
    return SequenceCheck::in_order;
  }
  if (sequence > expected_) {
    expected_ = sequence + 1;  // resynchronise: one gap is one error, not one per frame that follows
    return SequenceCheck::gap;
  }
  return SequenceCheck::behind;
}

void SenderTable::reset(std::size_t capacity) {
  senders_.clear();
  senders_.reserve(capacity);
}

SenderState* SenderTable::find(Tid sender) noexcept {
  auto at = std::lower_bound(senders_.begin(), senders_.end(), sender,
                             [](const SenderState& s, Tid tid) { return s.tid < tid; });
  return at != senders_.end() && at->tid == sender ? &*at : nullptr;
}

SenderState& SenderTable::find_or_add(Tid sender, bool& added) {
  auto at = std::lower_bound(senders_.begin(), senders_.end(), sender,
                             [](const SenderState& s, Tid tid) { return s.tid < tid; });
  added = at == senders_.end() || at->tid != sender;
  if (!added) return *at;
  // Allocates only beyond the capacity reserved by reset(), i.e. never for the senders of the partition.
  SenderState state;
  state.tid = sender;
  return *senders_.insert(at, state);
}

}  // namespace daqx::nton
