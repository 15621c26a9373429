// Splitting and chaining messages into frames, with the checks that make a malformed stream close its
// connection.
#include "daqx/pt/frame_assembler.hpp"

#include <algorithm>
#include <cstring>

namespace daqx::pt {

void FrameAssembler::push(mem::Ref&& message, std::size_t length) {
  message.set_window(0, length);
  waiting_.emplace_back(std::move(message), length);
}

mem::Ref FrameAssembler::take(std::size_t bytes) {
  auto& [buffer, length] = waiting_.front();
  if (position_ == 0 && bytes == length) {  // the whole message: its buffer, no view needed
    position_ = length;
    return std::move(buffer);
  }
  mem::Ref piece = buffer.view(position_, bytes);
  if (piece) position_ += bytes;
  return piece;
}

void FrameAssembler::pop_if_taken() {
  if (waiting_.empty() || position_ < waiting_.front().second) return;
  waiting_.pop_front();  // what is left of the buffer goes back to its pool once its views are released
  position_ = 0;
  ++done_;
}

FrameAssembler::Result FrameAssembler::next(Frame& out) {
  while (!waiting_.empty()) {
    const auto& [buffer, length] = waiting_.front();
    const std::size_t remaining = length - position_;
    if (have_ == 0) {
      // A frame starts here: its header is whole in this message (senders never cut a header).
      const std::byte* at = buffer.data() + position_;
      const FrameCheck check = check_header(at, remaining, 0, max_frame_size_);
      if (check != FrameCheck::ok) {
        error_ = "bad frame: " + std::string(to_string(check));
        if (check == FrameCheck::too_short && position_ > 0) error_ += " (what follows a frame in its message)";
        return Result::bad;
      }
      const FrameHeader header = decode_header(at);
      const std::size_t bytes = std::min<std::size_t>(header.total_length, remaining);
      // Whole in a small message (control frames, a BU's super-fragments, alone or packed with a few others): a
      // copy, so that the buffer goes back as soon as its last frame is copied instead of when the application
      // lets go of every frame of it. Frames of larger messages stay zero copy.
      if (length <= copy_limit_ && bytes == header.total_length && copy_pool_ != nullptr) {
        if (mem::Ref copy = copy_pool_->allocate(bytes)) {
          std::memcpy(copy.data(), at, bytes);
          position_ += bytes;
          pop_if_taken();
          out.header = header;
          out.data = std::move(copy);
          return Result::frame;
        }
      }
      mem::Ref piece = take(bytes);
      if (!piece) return Result::no_views;
      pop_if_taken();
      if (bytes == header.total_length) {
        out.header = header;
        out.data = std::move(piece);
        return Result::frame;
      }
      assembling_.header = header;
      assembling_.data = std::move(piece);
      have_ = bytes;
      continue;
    }
    // The rest of a frame that spans messages: from the start of this one.
    const std::size_t bytes = std::min(assembling_.header.total_length - have_, remaining);
    mem::Ref piece = take(bytes);
    if (!piece) return Result::no_views;
    pop_if_taken();
    assembling_.data.append(std::move(piece));  // chained, not copied
    have_ += bytes;
    if (have_ < assembling_.header.total_length) continue;
    have_ = 0;
    out = std::move(assembling_);
    assembling_ = Frame{};
    return Result::frame;
  }
  return Result::need_more;
}

void FrameAssembler::reset() noexcept {
  waiting_.clear();
  position_ = 0;
  assembling_.data.reset();
  assembling_ = Frame{};
  have_ = 0;
}

}  // namespace daqx::pt
