// Chaining messages into frames, with the checks that make a malformed stream close its connection.
#include "daqx/pt/frame_assembler.hpp"

namespace daqx::pt {

FrameAssembler::Result FrameAssembler::add(mem::Ref&& message, std::size_t length, Frame& out) {
  message.set_window(0, length);
  if (have_ == 0) {
    FrameCheck check = check_header(message.data(), length, 0, max_frame_size_);
    if (check != FrameCheck::ok) {
      error_ = "bad frame: " + std::string(to_string(check));
      return Result::bad;
    }
    assembling_.header = decode_header(message.data());
    if (length > assembling_.header.total_length) {
      error_ = "bad frame: a message runs past the end of its frame";
      return Result::bad;
    }
    assembling_.data = std::move(message);
    have_ = length;
  } else {
    if (have_ + length > assembling_.header.total_length) {
      error_ = "bad frame: a message runs past the end of its frame";
      return Result::bad;
    }
    assembling_.data.append(std::move(message));  // chained, not copied
    have_ += length;
  }
  if (have_ < assembling_.header.total_length) return Result::need_more;
  have_ = 0;
  out = std::move(assembling_);
  assembling_ = Frame{};
  return Result::frame;
}

void FrameAssembler::reset() noexcept {
  assembling_.data.reset();
  assembling_ = Frame{};
  have_ = 0;
}

}  // namespace daqx::pt
