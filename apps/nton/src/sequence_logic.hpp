// Per-sender sequence tracking on the receiving side: frames of each sender must arrive in order, without
// gaps, and a new run of the sender starts again from 1.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "daqx/api/frame.hpp"

namespace daqx::nton {

enum class SequenceCheck {
  in_order,  // the expected next sequence
  gap,       // later than expected: frames went missing (or a run started without its first frames)
  behind     // earlier than expected: a duplicate or a reordering
};

// The sequences of one sender. A frame of another run than the last one seen restarts the tracking: its
// sequence must then be 1. Runs are compared for equality only, so a sender whose numbering starts over
// (a restarted process) is followed too.
class SequenceTracker {
 public:
  SequenceCheck accept(std::uint32_t run, std::uint64_t sequence) noexcept;

  bool started() const noexcept { return started_; }
  std::uint32_t run() const noexcept { return run_; }
  // Highest sequence received in the current run (what an acknowledgement carries); 0 before any.
  std::uint64_t highest() const noexcept { return highest_; }
  std::uint64_t expected() const noexcept { return expected_; }

 private:
  bool started_ = false;
  std::uint32_t run_ = 0;
  std::uint64_t expected_ = 1;
  std::uint64_t highest_ = 0;
};

// What a Receiver keeps about one sender.
struct SenderState {
  Tid tid = kNoTid;
  SequenceTracker sequence;
  std::uint32_t since_ack = 0;  // frames received since the last acknowledgement was due
  bool ack_pending = false;     // an acknowledgement is due but could not be sent yet
};

// The senders a Receiver has heard from, sorted by TID for a binary search per frame.
class SenderTable {
 public:
  // Forgets every sender and makes room for capacity of them (the number of applications in the partition
  // is a bound), so find_or_add does not allocate on the data path.
  void reset(std::size_t capacity);
  // The state of sender; added says whether it was new. A reference stays valid until the next addition.
  SenderState& find_or_add(Tid sender, bool& added);
  SenderState* find(Tid sender) noexcept;

  std::span<SenderState> all() noexcept { return senders_; }
  std::size_t size() const noexcept { return senders_.size(); }

 private:
  std::vector<SenderState> senders_;
};

}  // namespace daqx::nton
