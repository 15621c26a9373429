// Turns the byte stream of one TCP connection into validated frames in pool blocks: small frames are
// copied out of a staging buffer (one read serves many frames), large payloads are read straight into
// their blocks (no copy). A large frame's blocks are taken as its bytes come, one block (at most the pool's
// largest) ahead of them: a peer that announces 64 MiB and sends little holds little, never what it only
// announced. The next frame's header is read with the end of a large frame's payload, so that a stream of large
// frames takes one read(2) per frame.
#pragma once

#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "daqx/api/frame.hpp"
#include "daqx/mempool/pool.hpp"

namespace daqx::pttcp {

class FrameReader {
 public:
  enum class Result {
    frame,      // a complete frame is in `frame`: deliver it
    need_more,  // read more bytes from the socket (into read_target())
    no_memory,  // the pool is exhausted: wait for blocks, then call next() again
    bad_frame   // the stream is not a valid daqx stream: close the connection (reason in error())
  };

  // frames up to copy_threshold bytes are copied out of the staging buffer; larger ones are read into place.
  FrameReader(mem::Pool& pool, std::size_t staging_bytes, std::size_t copy_threshold, std::uint32_t max_frame_size);

  // Where the next read(2)/readv(2) should put bytes, and how many it may put there. While a large frame is
  // being read into place these are the frame's own blocks.
  int read_target(iovec* vectors, int max_vectors) noexcept;
  // Tells the reader that `bytes` arrived in the read target.
  void advance(std::size_t bytes) noexcept;

  // Parses what has arrived. On Result::frame, `out` holds the frame.
  Result next(Frame& out) noexcept;

  const std::string& error() const noexcept { return error_; }
  // Bytes held for a frame that has not arrived whole (0 when between frames).
  bool mid_frame() const noexcept { return in_place_ || end_ > begin_; }

 private:
  Result start_frame(Frame& out) noexcept;
  void compact() noexcept;
  // Appends the next block of the frame being read in place (the pool's largest, or what is left); false when
  // the pool has none.
  bool grow() noexcept;

  mem::Pool& pool_;
  std::unique_ptr<std::byte[]> staging_;  // from the first read on
  std::size_t staging_bytes_;
  std::size_t copy_threshold_;
  std::uint32_t max_frame_size_;
  std::size_t begin_ = 0;  // parsed up to here
  std::size_t end_ = 0;    // filled up to here

  // After a large frame, read only the next header before anything else, so a large payload that follows
  // goes straight into its blocks instead of filling the staging buffer and being copied from it.
  bool expect_large_ = false;

  // A large frame being read into its own blocks.
  bool in_place_ = false;
  FrameHeader header_{};
  mem::Ref frame_;
  mem::Block* block_ = nullptr;   // block being filled
  std::size_t block_filled_ = 0;  // bytes of block_'s window filled
  std::size_t remaining_ = 0;     // bytes of the frame still to arrive
  std::size_t unallocated_ = 0;   // bytes of the frame no block is taken for yet
  std::string error_;
};

}  // namespace daqx::pttcp
