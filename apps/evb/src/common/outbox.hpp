// Sending for the event-builder applications: frames that a target could not take yet wait in order, per
// target, so one slow or dead peer never holds up the others (CMS's per-role proxies own this). Frames for one
// target go to the context in batches where the caller has several (send_batch) and when the waiting ones are
// retried (flush), so the route and the connection's lock are paid once per batch.
// Dispatch thread only.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <span>
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
  // The same for several frames to target, in order, in one ApplicationContext::send_batch where nothing waits
  // for it: what the target cannot take yet waits, in order, behind what does. A frame refused with an error or
  // no_route is dropped and counted, as send() does, and the target is listed once for take_failed() per call
  // (one batch is one send to one peer). Every frame's target and data are taken (the data left empty).
  void send_batch(Tid target, std::span<OutgoingFrame> frames);
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
  using Queue = std::deque<OutgoingFrame>;
  // Sends frames (all to target) until one is refused with would_block (true: it and the rest are left, the
  // refusal counted) or all are gone; frames dropped with an error are counted, and target listed as failed.
  // Returns how many of frames are done (sent or dropped).
  std::size_t send_run(Tid target, std::span<OutgoingFrame> frames, bool& blocked);
  void wait(Queue& queue, OutgoingFrame&& frame);

  ApplicationContext& context_;
  std::array<OutgoingFrame, kMaxBatchFrames> retry_;  // flush's batch, kept rather than built on every flush
  std::unordered_map<Tid, Queue> waiting_;
  std::vector<Tid> failed_;
  std::size_t waiting_total_ = 0;
  std::uint64_t would_blocks_ = 0;
  std::uint64_t errors_ = 0;
  std::uint64_t dropped_ = 0;
};

}  // namespace daqx::evb
