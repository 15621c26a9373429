// The messages one connection has on the wire, in posting order, and how many frames each completes. The
// frames themselves stay in the connection's queue until every message that carries a byte of them is known
// sent, so a completion that says "this one is done" can never free blocks the network may still read.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace daqx::pt {

class SendRing {
 public:
  void resize(std::size_t slots) {
    entries_.assign(slots, Entry{});
    posted_ = retired_ = 0;
  }
  std::size_t size() const noexcept { return entries_.size(); }
  bool full() const noexcept { return posted_ - retired_ >= entries_.size(); }
  std::size_t in_flight() const noexcept { return static_cast<std::size_t>(posted_ - retired_); }
  std::size_t next_slot() const noexcept { return static_cast<std::size_t>(posted_ % entries_.size()); }

  // Records the message just posted in next_slot(): it completes `frames` frames (0: it carries part of one).
  void add(std::size_t frames) noexcept {
    Entry& entry = entries_[next_slot()];
    entry.sequence = posted_;
    entry.frames = frames;
    entry.done = false;
    ++posted_;
  }

  // The message in slot is done (completions may come in any order): retires the done messages at the front,
  // calling retire(frames) for each, in posting order.
  template <typename Retire>
  void complete(std::size_t slot, Retire&& retire) {
    entries_[slot].done = true;
    while (retired_ < posted_) {
      Entry& oldest = entries_[retired_ % entries_.size()];
      if (!oldest.done) break;
      oldest.done = false;
      ++retired_;
      retire(oldest.frames);
    }
  }

  // The message in slot and every one posted before it are done (a reliable connected queue pair completes
  // in order, and one completion may stand for many unsignaled messages).
  template <typename Retire>
  void complete_through(std::size_t slot, Retire&& retire) {
    const std::uint64_t through = entries_[slot].sequence;
    while (retired_ < posted_ && retired_ <= through) {
      Entry& oldest = entries_[retired_ % entries_.size()];
      oldest.done = false;
      ++retired_;
      retire(oldest.frames);
    }
  }

  // The connection is gone: nothing is in flight any more (its frames go with the queue).
  void clear() noexcept { retired_ = posted_; }

 private:
  struct Entry {
    std::uint64_t sequence = 0;
    std::size_t frames = 0;
    bool done = false;
  };
  std::vector<Entry> entries_;
  std::uint64_t posted_ = 0;
  std::uint64_t retired_ = 0;
};

}  // namespace daqx::pt
