// What an application context does for batches and multipart messages when it does not do better itself (a test
// double): one frame at a time through the per-frame calls, so that every context offers the whole API.
#include "daqx/api/application.hpp"

#include <memory>
#include <string>
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

SendStatus ApplicationContext::send_parts(Tid target, std::uint16_t function, std::uint64_t transaction,
                                          std::span<mem::Ref> parts, std::uint8_t flags) noexcept {
  const MultipartCheck check = check_parts(parts);
  if (check != MultipartCheck::ok) {
    for (mem::Ref& part : parts) part.reset();
    try {
      log(LogLevel::warning, "send_parts of " + std::to_string(parts.size()) + " parts refused: " +
                                 std::string(to_string(check)));
    } catch (...) {
      // The log could not take it: the status says what happened.
    }
    return SendStatus::error;
  }
  mem::Ref frame = allocate_frame(part_table_size(parts.size()));
  if (!frame) return SendStatus::would_block;
  write_part_table(parts, frame);
  link_parts(frame, parts);
  const SendStatus status = send(target, function, transaction, frame, flags | frame_flags::multipart);
  if (status == SendStatus::would_block || status == SendStatus::no_route) unlink_parts(frame, parts);
  return status;
}

}  // namespace daqx
