// What an application context does for batches when it does not do better itself (a test double): one frame at
// a time through the per-frame calls, so that every context offers the whole API.
#include "daqx/api/application.hpp"

#include <memory>
#include <utility>

namespace daqx {

void ApplicationContext::bind_batch(std::uint16_t function, BatchHandler handler) {
  auto shared = std::make_shared<BatchHandler>(std::move(handler));
  bind(function, [shared](Frame&& frame) { (*shared)(std::span<Frame>(&frame, 1)); });
}

std::size_t ApplicationContext::allocate_frames(std::size_t payload_bytes, std::span<mem::Ref> frames) noexcept {
  std::size_t made = 0;
  for (mem::Ref& frame : frames) {
    frame = allocate_frame(payload_bytes);
    if (!frame) break;
    ++made;
  }
  return made;
}

BatchSendResult ApplicationContext::send_batch(std::span<OutgoingFrame> frames) noexcept {
  BatchSendResult result;
  for (OutgoingFrame& f : frames) {
    result.status = send(f.target, f.function, f.transaction, f.data, f.flags);
    if (result.status != SendStatus::ok) return result;
    ++result.sent;
  }
  return result;
}

}  // namespace daqx
