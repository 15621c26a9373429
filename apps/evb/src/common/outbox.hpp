// Sending for the event-builder applications: frames that a target could not take yet wait in order, per
// target, so one slow or dead peer never holds up the others (CMS's per-role proxies own this).
// Dispatch thread only.
#pragma once

#include <cstdint>
#include <deque>
#include <unordered_map>
#include <utility>
#include <vector>

#include "daqx/evb/protocol.hpp"
#include "daqx/api/application.hpp"

namespace daqx::evb {

// A Control frame from the application's pool, encoded; empty when the pool has no block.
inline mem::Ref control_frame(ApplicationContext& context, const Control& control) {
  const std::size_t bytes = control_bytes(control);
  mem::Ref frame = context.allocate_frame(bytes);
  if (!frame) return frame;
  if (!encode(control, frame.data() + kFrameHeaderSize, bytes)) return {};
  frame.resize(kFrameHeaderSize + bytes);
  return frame;
}

class Outbox {
 public:
  explicit Outbox(ApplicationContext& context) : context_(context) {}

  // Sends at once when nothing waits for target, else queues behind what does. Returns ok when sent or
  // queued; no_route or error when the frame was dropped (counted).
  SendStatus send(Tid target, std::uint16_t function, std::uint64_t transaction, mem::Ref&& frame,
                  std::uint8_t flags = 0);
  // For heartbeats and the like: sends only if nothing waits for target (never queues); true when sent.
  bool send_if_idle(Tid target, std::uint16_t function, mem::Ref&& frame, std::uint8_t flags = 0);
  // Retries the waiting frames (call from on_send_ready); returns true when nothing waits any more.
  bool flush();
  // Releases everything waiting for target (it is gone); returns how many frames.
  std::size_t drop(Tid target);
  void clear();
  void reset_counters() noexcept { would_blocks_ = errors_ = dropped_ = 0; }

  // Targets a send to failed since the last call (connection lost: frames to them were released). The
  // owner decides what that means for the protocol, e.g. that the events in those frames are gone.
  std::vector<Tid> take_failed() { return std::exchange(failed_, {}); }

  std::size_t waiting(Tid target) const;
  std::size_t waiting() const noexcept { return waiting_total_; }
  std::uint64_t would_blocks() const noexcept { return would_blocks_; }
  std::uint64_t errors() const noexcept { return errors_; }
  std::uint64_t dropped() const noexcept { return dropped_; }

 private:
  struct Pending {
    std::uint16_t function = 0;
    std::uint64_t transaction = 0;
    std::uint8_t flags = 0;
    mem::Ref frame;
  };
  ApplicationContext& context_;
  std::unordered_map<Tid, std::deque<Pending>> waiting_;
  std::vector<Tid> failed_;
  std::size_t waiting_total_ = 0;
  std::uint64_t would_blocks_ = 0;
  std::uint64_t errors_ = 0;
  std::uint64_t dropped_ = 0;
};

}  // namespace daqx::evb
