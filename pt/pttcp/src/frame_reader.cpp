// The receive-side parser of pttcp: header checks first, then copy-out or read-in-place.
#include "frame_reader.hpp"

#include <algorithm>
#include <cstring>

namespace daqx::pttcp {

FrameReader::FrameReader(mem::Pool& pool, std::size_t staging_bytes, std::size_t copy_threshold,
                         std::uint32_t max_frame_size)
    : pool_(pool),
      staging_bytes_(staging_bytes),
      copy_threshold_(std::min(copy_threshold, staging_bytes)),
      max_frame_size_(max_frame_size) {}

void FrameReader::compact() noexcept {
  if (begin_ == 0) return;
  std::size_t held = end_ - begin_;
  if (held > 0) std::memmove(staging_.get(), staging_.get() + begin_, held);
  begin_ = 0;
  end_ = held;
}

int FrameReader::read_target(iovec* vectors, int max_vectors) noexcept {
  if (in_place_) {
    // The rest of the current block, then the following blocks of the chain.
    int count = 0;
    std::size_t left = remaining_;
    mem::Block* block = block_;
    std::size_t filled = block_filled_;
    while (block != nullptr && count < max_vectors && left > 0) {
      std::size_t room = std::min(block->size() - filled, left);
      if (room > 0) {
        vectors[count].iov_base = block->data() + filled;
        vectors[count].iov_len = room;
        ++count;
        left -= room;
      }
      block = block->next();
      filled = 0;
    }
    // The next frame's header with the end of this one's payload: a stream of large frames then takes one
    // read each, not two. The staging buffer is empty while a frame is read in place (start_frame moved what
    // it held into the frame).
    if (left == 0 && count < max_vectors) {
      vectors[count].iov_base = staging_.get() + end_;
      vectors[count].iov_len = kFrameHeaderSize;
      ++count;
    }
    return count;
  }
  // Taken at the first read, not at accept, and not zeroed: a connection that carries nothing costs no memory.
  if (!staging_) staging_ = std::make_unique_for_overwrite<std::byte[]>(staging_bytes_);
  if (end_ == staging_bytes_) compact();
  vectors[0].iov_base = staging_.get() + end_;
  vectors[0].iov_len = staging_bytes_ - end_;
  if (expect_large_ && end_ - begin_ < kFrameHeaderSize)
    vectors[0].iov_len = std::min(vectors[0].iov_len, kFrameHeaderSize - (end_ - begin_));
  return 1;
}

void FrameReader::advance(std::size_t bytes) noexcept {
  if (!in_place_) {
    end_ += bytes;
    return;
  }
  // Past the frame's end: the start of the next frame's header, in the staging buffer (read_target).
  const std::size_t past_end = bytes > remaining_ ? bytes - remaining_ : 0;
  end_ += past_end;
  bytes -= past_end;
  remaining_ -= bytes;
  while (bytes > 0 && block_ != nullptr) {
    std::size_t room = block_->size() - block_filled_;
    std::size_t used = std::min(room, bytes);
    block_filled_ += used;
    bytes -= used;
    if (block_filled_ == block_->size() && block_->next() != nullptr) {
      block_ = block_->next();
      block_filled_ = 0;
    }
  }
}

bool FrameReader::grow() noexcept {
  const std::size_t piece = std::min(unallocated_, pool_.max_block_size());
  mem::Ref more = pool_.allocate(piece);
  if (!more) return false;
  if (frame_) {
    frame_.append(std::move(more));
  } else {
    frame_ = std::move(more);
  }
  unallocated_ -= piece;
  return true;
}

FrameReader::Result FrameReader::next(Frame& out) noexcept {
  if (in_place_) {
    if (remaining_ > 0) {
      // The blocks taken so far are full: the next one, now that bytes for it are coming.
      if (block_filled_ == block_->size() && block_->next() == nullptr) {
        if (!grow()) return Result::no_memory;
        block_ = block_->next();
        block_filled_ = 0;
      }
      return Result::need_more;
    }
    in_place_ = false;
    expect_large_ = true;
    out.header = header_;
    out.data = std::move(frame_);
    block_ = nullptr;
    return Result::frame;
  }
  return start_frame(out);
}

FrameReader::Result FrameReader::start_frame(Frame& out) noexcept {
  std::size_t available = end_ - begin_;
  if (available < kFrameHeaderSize) {
    if (staging_bytes_ - begin_ < kFrameHeaderSize) compact();
    return Result::need_more;
  }
  const std::byte* at = staging_.get() + begin_;
  FrameCheck check = check_header(at, available, 0, max_frame_size_);
  if (check != FrameCheck::ok) {
    error_ = std::string(to_string(check));
    return Result::bad_frame;
  }
  FrameHeader header = decode_header(at);
  std::size_t total = header.total_length;
  if (total > copy_threshold_ || total > available) {
    if (total <= copy_threshold_) {
      // A small frame not yet whole: make room behind it and wait.
      if (staging_bytes_ - begin_ < total) compact();
      return Result::need_more;
    }
    // Large: blocks of its own, as allocate_chain would lay them out (the pool's largest, then the rest), taken
    // for what is here and one block more; the rest as the bytes come (next()). Fill them with what is here,
    // read the rest straight in.
    std::size_t here = std::min(available, total);
    frame_.reset();
    unallocated_ = total;
    do {
      if (!grow()) {
        frame_.reset();  // what was taken goes back; the header is parsed again when blocks are free
        return Result::no_memory;
      }
    } while (total - unallocated_ < here);
    mem::Ref frame = std::move(frame_);
    std::size_t copied = 0;
    mem::Block* block = frame.head();
    std::size_t filled = 0;
    while (copied < here) {
      std::size_t piece = std::min(block->size() - filled, here - copied);
      std::memcpy(block->data() + filled, at + copied, piece);
      copied += piece;
      filled += piece;
      if (filled == block->size() && block->next() != nullptr) {
        block = block->next();
        filled = 0;
      }
    }
    begin_ += here;
    if (begin_ == end_) begin_ = end_ = 0;
    expect_large_ = true;
    if (here == total) {
      out.header = header;
      out.data = std::move(frame);
      return Result::frame;
    }
    in_place_ = true;
    header_ = header;
    frame_ = std::move(frame);
    block_ = block;
    block_filled_ = filled;
    remaining_ = total - here;
    return Result::need_more;
  }
  // Small and whole: one copy out of the staging buffer into a block of the right size.
  expect_large_ = false;
  mem::Ref frame = pool_.allocate(total);
  if (!frame) return Result::no_memory;
  std::memcpy(frame.data(), at, total);
  begin_ += total;
  if (begin_ == end_) begin_ = end_ = 0;
  out.header = header;
  out.data = std::move(frame);
  return Result::frame;
}

}  // namespace daqx::pttcp
