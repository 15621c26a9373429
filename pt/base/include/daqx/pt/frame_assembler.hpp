// Turns the messages of one incoming connection, in the order they arrived, back into frames: the first
// message of a frame must start with a valid header, the next ones are chained to it (not copied) until the
// frame's length is reached. Anything else is a broken stream, and the connection must close.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "daqx/api/frame.hpp"

namespace daqx::pt {

class FrameAssembler {
 public:
  enum class Result {
    need_more,  // the frame continues in the next message
    frame,      // `out` holds a complete frame
    bad         // not a valid stream (reason in error()): close the connection
  };

  explicit FrameAssembler(std::uint32_t max_frame_size = kDefaultMaxFrameSize) : max_frame_size_(max_frame_size) {}

  // Takes one message of `length` bytes at the start of message's window.
  Result add(mem::Ref&& message, std::size_t length, Frame& out);
  bool mid_frame() const noexcept { return have_ > 0; }
  const std::string& error() const noexcept { return error_; }
  void reset() noexcept;  // a frame half received goes back to its pool

 private:
  std::uint32_t max_frame_size_;
  Frame assembling_;
  std::size_t have_ = 0;  // bytes of assembling_ so far (0: the next message starts a frame)
  std::string error_;
};

}  // namespace daqx::pt
