// evb::evm::AllocationLog (allocation_log.hpp): letting go of what every RU was told, and a dropped BU's entries.
#include "evm/allocation_log.hpp"

#include <algorithm>

namespace daqx::evb::evm {

void AllocationLog::release_before(Position oldest) {
  if (oldest <= first_) return;
  const std::size_t n = std::min(entries_.size(), static_cast<std::size_t>(oldest - first_));
  // Usually every RU is told everything at each flush: the log empties and keeps its capacity.
  entries_.erase(entries_.begin(), entries_.begin() + static_cast<std::ptrdiff_t>(n));
  first_ += n;
}

void AllocationLog::forget_bu(Tid bu) {
  forgotten_.clear();
  std::size_t kept = 0;
  for (std::size_t i = 0; i < entries_.size(); ++i) {
    if (entries_[i].bu == bu) {
      forgotten_.push_back(first_ + i);
      continue;
    }
    entries_[kept++] = entries_[i];
  }
  entries_.resize(kept);
}

AllocationLog::Position AllocationLog::where(Position before_forget) const noexcept {
  const auto taken_out_before = std::lower_bound(forgotten_.begin(), forgotten_.end(), before_forget) - forgotten_.begin();
  return before_forget - static_cast<Position>(taken_out_before);
}

}  // namespace daqx::evb::evm
