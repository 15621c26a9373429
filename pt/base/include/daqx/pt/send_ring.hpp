// The messages one connection has on the wire, in posting order, and the frames they end. A frame's blocks
// go back to their pools only when every message before them is known sent, so a completion that says
// "this one is done" can never free blocks the network may still read.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "daqx/mempool/ref.hpp"

namespace daqx::pt {

class SendRing {
 public:
  void resize(std::size_t slots) {
    entries_.clear();
    entries_.resize(slots);
    posted_ = retired_ = 0;
  }
  std::size_t size() const noexcept { return entries_.size(); }
  bool full() const noexcept { return posted_ - retired_ >= entries_.size(); }
  std::size_t in_flight() const noexcept { return static_cast<std::size_t>(posted_ - retired_); }
  std::size_t next_slot() const noexcept { return static_cast<std::size_t>(posted_ % entries_.size()); }
  std::uint64_t posted() const noexcept { return posted_; }

  // Records the message just posted in next_slot(). When it ends a frame, frame_bytes is the frame's size and
  // frame holds its blocks (empty when they could go back at once, e.g. the whole frame went inline).
  void add(mem::Ref&& frame, std::size_t frame_bytes) noexcept {
    Entry& entry = entries_[next_slot()];
    entry.sequence = posted_;
    entry.frame = std::move(frame);
    entry.frame_bytes = frame_bytes;
    entry.done = false;
    ++posted_;
  }

  // The message in slot is done (completions may come in any order): retires the done messages at the
  // front, calling sent(frame_bytes) for each frame they end.
  template <typename Sent>
  void complete(std::size_t slot, Sent&& sent) {
    entries_[slot].done = true;
    while (retired_ < posted_) {
      Entry& oldest = entries_[retired_ % entries_.size()];
      if (!oldest.done) break;
      retire(oldest, sent);
    }
  }

  // The message in slot and every one posted before it are done (a reliable connected queue pair
  // completes in order, and one completion may stand for many unsignaled messages).
  template <typename Sent>
  void complete_through(std::size_t slot, Sent&& sent) {
    const std::uint64_t through = entries_[slot].sequence;
    while (retired_ < posted_ && retired_ <= through) retire(entries_[retired_ % entries_.size()], sent);
  }

  // The connection is gone: releases every frame still held and returns how many there were.
  std::size_t release() noexcept {
    std::size_t frames = 0;
    for (Entry& entry : entries_) {
      if (entry.frame) ++frames;
      entry.frame.reset();
      entry.frame_bytes = 0;
      entry.done = false;
    }
    retired_ = posted_;
    return frames;
  }

 private:
  struct Entry {
    std::uint64_t sequence = 0;
    mem::Ref frame;
    std::size_t frame_bytes = 0;
    bool done = false;
  };

  template <typename Sent>
  void retire(Entry& entry, Sent& sent) {
    entry.done = false;
    if (entry.frame_bytes != 0) sent(entry.frame_bytes);
    entry.frame_bytes = 0;
    entry.frame.reset();  // the frame is on the wire: its blocks go back to their pools
    ++retired_;
  }

  std::vector<Entry> entries_;
  std::uint64_t posted_ = 0;
  std::uint64_t retired_ = 0;
};

}  // namespace daqx::pt
