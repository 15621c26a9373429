// Batches: many frames allocated, sent or handled in one call, so that the per-frame costs of the application
// path (the call, the route, the lock of a connection, the wake-up of a thread, the handler's dispatch) are paid
// once per batch. A batch is an API notion only: every frame of it is an ordinary frame on the wire and to an
// application that takes frames one at a time, so peers that batch and peers that do not work together.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>

#include "daqx/api/frame.hpp"
#include "daqx/api/status.hpp"

namespace daqx {

// One frame of a batch to send: what ApplicationContext::send() takes as arguments, and the frame itself (room
// for the header first, as allocate_frame() gives it).
struct OutgoingFrame {
  Tid target = kNoTid;
  std::uint16_t function = 0;
  std::uint64_t transaction = 0;
  mem::Ref data;
  std::uint8_t flags = 0;
};

// What a batch send did. Frames [0, sent) are gone (as send() == ok for each). When sent < the batch's size,
// status says why the frame at `sent` was not taken, as send() would have: would_block and no_route leave it and
// every frame after it with the caller; error released it (its connection failed) and leaves the ones after it.
struct BatchSendResult {
  std::size_t sent = 0;
  SendStatus status = SendStatus::ok;
  bool all_sent(std::size_t size) const noexcept { return sent == size; }
};

// A handler of batches: consecutive frames for one function code that arrived together (from one transport's
// round of completions, or one application's batch send), in the order they were sent per sender. The handler
// owns every frame of the span: it releases, keeps (moves out) or forwards each; what it leaves in the span is
// released after it returns.
using BatchHandler = std::function<void(std::span<Frame> frames)>;

// The most frames the executive hands to one call of a batch handler, and the size of the batches it forms on the
// send side (a larger batch is sent in pieces of this many: the caller never sees the difference).
inline constexpr std::size_t kMaxBatchFrames = 64;

}  // namespace daqx
