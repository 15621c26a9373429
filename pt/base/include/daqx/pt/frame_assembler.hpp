// Turns the messages of one incoming connection, in the order they arrived, back into frames. A message may
// carry several whole frames (packed by the sender), the end of one frame and the start of the next, or one
// piece of a large frame. A frame that is a whole message is handed out as that message's buffer; one that
// is part of a message as a view of the buffer (mem::Ref::view: a window, not a copy); one that spans
// messages as a chain of such pieces; the frames of a small message may instead be copied into blocks of their
// own (copy_small_frames), so that control frames an application keeps do not pin a whole receive buffer. Anything that is not a valid stream of frames is refused with the
// reason, and the connection must close.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <utility>

#include "daqx/api/frame.hpp"
#include "daqx/mempool/pool.hpp"

namespace daqx::pt {

class FrameAssembler {
 public:
  enum class Result {
    frame,      // `out` holds a complete frame
    need_more,  // every message so far is taken: the next frame continues in a message yet to come
    no_views,   // the receive pool has no view left: try again when it has (pool on_available)
    bad         // not a valid stream (reason in error()): close the connection
  };

  explicit FrameAssembler(std::uint32_t max_frame_size = kDefaultMaxFrameSize) : max_frame_size_(max_frame_size) {}

  // The frames of a message of at most `limit` bytes are copied into blocks of `pool` (when it has one; else
  // handed on as for any other message). Frames of larger messages stay the buffer or views of it.
  void copy_small_frames(mem::Pool* pool, std::size_t limit) noexcept {
    copy_pool_ = pool;
    copy_limit_ = limit;
  }

  // A message of `length` bytes at the start of message's window arrived; it waits here until taken.
  void push(mem::Ref&& message, std::size_t length);
  // The next complete frame from the messages pushed so far.
  Result next(Frame& out);

  // Messages pushed whose every byte has been taken into frames: their buffers may be replaced.
  std::uint64_t messages_done() const noexcept { return done_; }
  // Messages pushed and not yet taken whole.
  std::size_t messages_waiting() const noexcept { return waiting_.size(); }
  bool mid_frame() const noexcept { return have_ > 0; }  // a frame that spans messages is half here
  const std::string& error() const noexcept { return error_; }
  void reset() noexcept;  // every buffer and a frame half taken go back to their pools

 private:
  // The next `bytes` of the front message as a Ref of their own: the buffer itself when they are all of it,
  // else a view. Empty when no view can be had.
  mem::Ref take(std::size_t bytes);
  void pop_if_taken();

  std::uint32_t max_frame_size_;
  mem::Pool* copy_pool_ = nullptr;
  std::size_t copy_limit_ = 0;
  std::deque<std::pair<mem::Ref, std::size_t>> waiting_;  // messages and their lengths, in order
  std::size_t position_ = 0;                              // bytes of the front message already taken
  std::uint64_t done_ = 0;
  Frame assembling_;       // a frame that spans messages
  std::size_t have_ = 0;   // its bytes so far (0: the next frame starts at position_)
  std::string error_;
};

}  // namespace daqx::pt
