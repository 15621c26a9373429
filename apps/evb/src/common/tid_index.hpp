// evb::TidIndex, where a unit's TID is in a list of units (the BU's contributors, the EvM's BUs and RUs): built
// once at configure, looked up in constant time for every frame, so the cost of a lookup does not grow with
// the partition.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "daqx/api/frame.hpp"

namespace daqx::evb {

class TidIndex {
 public:
  static constexpr std::size_t npos = static_cast<std::size_t>(-1);

  TidIndex() = default;
  // Positions in `tids`; a TID listed twice keeps its first position (as a search from the front would).
  explicit TidIndex(std::span<const Tid> tids) {
    const Tid largest = tids.empty() ? 0 : *std::max_element(tids.begin(), tids.end());
    // A table indexed by the TID itself when the TIDs are dense enough (partitions number units in blocks, e.g.
    // 100.. for RUs and 200.. for BUs), a hash map otherwise, so a stray large TID does not cost megabytes.
    dense_ = largest < kDenseFloor + kDenseFactor * tids.size();
    if (dense_) {
      table_.assign(static_cast<std::size_t>(largest) + 1, kAbsent);
      for (std::size_t i = tids.size(); i-- > 0;) table_[tids[i]] = static_cast<std::uint32_t>(i);
    } else {
      sparse_.reserve(tids.size());
      for (std::size_t i = 0; i < tids.size(); ++i) sparse_.try_emplace(tids[i], static_cast<std::uint32_t>(i));
    }
  }

  // The position of tid, or npos when it is not listed.
  std::size_t find(Tid tid) const noexcept {
    if (dense_) return tid < table_.size() && table_[tid] != kAbsent ? table_[tid] : npos;
    const auto it = sparse_.find(tid);
    return it == sparse_.end() ? npos : it->second;
  }

 private:
  static constexpr std::uint32_t kAbsent = UINT32_MAX;
  static constexpr std::size_t kDenseFloor = 1u << 16;  // 256 KiB of table at most for any list
  static constexpr std::size_t kDenseFactor = 16;

  bool dense_ = true;
  std::vector<std::uint32_t> table_;
  std::unordered_map<Tid, std::uint32_t> sparse_;
};

}  // namespace daqx::evb
