// Block filling for FragmentSender: a block never mixes batches (the BU learns a slot's batch from any block
// of it), is sized to what the batch still needs up to blockSize, and the last block of a batch asks the
// transport to send at once, so a BU never waits for a pack timeout to complete its events. A send is a batch
// of up to blocksPerSend blocks for one BU.
#include "readout/fragment_sender.hpp"

#include <algorithm>
#include <array>
#include <span>
#include <chrono>

namespace daqx::evb::readout {

void FragmentSender::start_run(std::uint32_t run) {
  run_ = run;
  clear();
}

void FragmentSender::clear() {
  queues_.clear();
  queue_of_.clear();
  round_.clear();
  next_queue_ = 0;
  events_queued_ = 0;
}

FragmentSender::BuQueue& FragmentSender::queue_for(Tid bu) {
  const auto [it, added] = queue_of_.try_emplace(bu, queues_.size());
  if (!added) return queues_[it->second];
  queues_.emplace_back();
  queues_.back().bu = bu;
  queues_.back().cursor = source_->cursor();
  return queues_.back();
}

void FragmentSender::add(const Assignment& assignment) {
  BuQueue& q = queue_for(assignment.bu);
  if (assignment.generation < q.dropped_below || assignment.count == 0) return;
  if (!q.in_round) {
    q.in_round = true;
    round_.push_back(static_cast<std::size_t>(&q - queues_.data()));
  }
  q.batches.push_back(assignment);
  q.latest_generation = std::max(q.latest_generation, assignment.generation);
  events_queued_ += assignment.count;
}

std::uint64_t FragmentSender::drop_bu(Tid bu, std::uint32_t generation) {
  BuQueue& q = queue_for(bu);
  q.dropped_below = std::max(q.dropped_below, generation);
  std::uint64_t dropped = 0;
  std::deque<Assignment> kept;
  for (std::size_t i = 0; i < q.batches.size(); ++i) {
    const Assignment& a = q.batches[i];
    const std::uint32_t unsent = i == 0 ? a.count - q.next_event : a.count;
    if (a.generation < generation) {
      dropped += unsent;
      if (i == 0) {
        q.next_event = 0;
        q.event_started = false;
      }
    } else {
      kept.push_back(a);
    }
  }
  q.batches = std::move(kept);
  events_queued_ -= std::min(events_queued_, dropped);
  return dropped;
}

std::size_t FragmentSender::bytes_left_in_batch(const BuQueue& q, std::size_t enough) const noexcept {
  const Assignment& batch = q.batches.front();
  constexpr std::size_t piece_overhead = kPieceHeaderBytes + kPieceAlignment;
  std::size_t bytes = 0;
  std::uint32_t i = q.next_event;
  if (q.event_started) {
    bytes += q.cursor->remaining() + piece_overhead;
    ++i;
  }
  // Enough to know the blocks will be full: stop counting there.
  for (; i < batch.count && bytes < enough; ++i) bytes += source_->size_of(batch.first_event + i) + piece_overhead;
  return bytes;
}

OutgoingFrame FragmentSender::fill_block(BuQueue& q, mem::Ref&& frame, std::size_t bytes) {
  const Assignment batch = q.batches.front();
  std::byte* base = frame.data() + kFrameHeaderSize;
  ByteWriter out(base, bytes - kFrameHeaderSize);
  out.skip(kBlockHeaderBytes);
  std::uint32_t pieces = 0;
  std::uint32_t flags = 0;
  for (;;) {
    if (!q.event_started) {
      if (q.next_event == batch.count) {
        flags |= block_flags::last_of_batch;
        break;
      }
      q.cursor->begin(batch.first_event + q.next_event);
      q.event_started = true;
      q.written = 0;
    }
    if (out.room() < kPieceHeaderBytes + kPieceAlignment) break;
    // Whole multiples of the alignment, so the padding after the piece always fits.
    const std::size_t fits = (out.room() - kPieceHeaderBytes) & ~(kPieceAlignment - 1);
    const std::size_t piece = std::min(q.cursor->remaining(), fits);
    PieceHeader header;
    header.event = batch.first_event + q.next_event;
    header.superfragment_size = static_cast<std::uint32_t>(q.cursor->total());
    header.offset = q.written;
    header.size = static_cast<std::uint32_t>(piece);
    encode(header, out);
    const std::size_t n = q.cursor->write(out.cursor(), piece);
    out.skip(n);
    out.pad_to(kPieceAlignment);
    q.written += static_cast<std::uint32_t>(n);
    ++pieces;
    if (q.cursor->remaining() != 0) break;  // the block is full; the super-fragment continues in the next
    q.event_started = false;
    ++q.next_event;
    ++fragments_sent_;
    bytes_sent_ += q.cursor->total();
    --events_queued_;
  }
  ByteWriter head(base, kBlockHeaderBytes);
  encode(BlockHeader{run_, batch.generation, batch.slot, batch.count, batch.first_event, pieces, flags}, head);
  frame.resize(kFrameHeaderSize + out.used());
  const bool last = (flags & block_flags::last_of_batch) != 0;
  if (last) {
    q.batches.pop_front();
    q.next_event = 0;
  }
  ++blocks_sent_;
  return OutgoingFrame{batch.bu, function::fragments, batch.first_event, std::move(frame),
                       last ? frame_flags::send_now : std::uint8_t{0}};
}

// The sizes of what the batch still needs are counted once for the blocks of a send, not once per block: the
// blocks that will be full are allocated together, and one shorter than blockSize (the last of a batch) alone.
// The count of full blocks is an estimate (a block holds a little less than blockSize of what was counted), so
// the last of them may come out shorter or not be needed (let go): its frame is larger than it needs, its
// content the same, since a block ends with its batch whatever its room.
std::size_t FragmentSender::send_blocks(BuQueue& q, std::size_t max_blocks, std::uint64_t bytes_until) {
  constexpr std::size_t kHeaders = kFrameHeaderSize + kBlockHeaderBytes;
  std::array<OutgoingFrame, kMaxBatchFrames>& blocks = blocks_;
  std::array<mem::Ref, kMaxBatchFrames>& full = full_;
  std::size_t full_made = 0, full_used = 0;
  std::size_t n = 0;
  max_blocks = std::min(max_blocks, blocks.size());
  while (n < max_blocks && !q.batches.empty() && bytes_sent_ < bytes_until) {
    mem::Ref frame;
    std::size_t room = block_size_;  // frame header included
    if (full_used < full_made) {
      frame = std::move(full[full_used++]);
    } else {
      const std::size_t left = max_blocks - n;
      const std::size_t need = kHeaders + bytes_left_in_batch(q, left * block_size_);
      if (need >= block_size_) {
        const std::size_t count = std::min(left, need / block_size_);
        full_made = context_.allocate_frames(block_size_ - kFrameHeaderSize, std::span(full).first(count));
        full_used = 0;
        if (full_made != 0) frame = std::move(full[full_used++]);
      } else {
        room = need;
        frame = context_.allocate_frame(room - kFrameHeaderSize);
      }
    }
    if (!frame) break;  // the pool is empty: what is filled goes now
    blocks[n++] = fill_block(q, std::move(frame), room);
  }
  for (std::size_t i = full_used; i < full_made; ++i) full[i].reset();  // allocated and not needed
  if (n != 0) outbox_.send_batch(q.bu, std::span(blocks).first(n));  // takes every block's data
  return n;
}

void FragmentSender::leave_round_when_dry() {
  std::size_t kept = 0, next = 0;
  for (std::size_t k = 0; k < round_.size(); ++k) {
    BuQueue& q = queues_[round_[k]];
    if (q.batches.empty()) {
      q.in_round = false;
      continue;
    }
    if (k < next_queue_) ++next;
    round_[kept++] = round_[k];
  }
  round_.resize(kept);
  next_queue_ = kept == 0 ? 0 : next % kept;
}

FragmentSender::Progress FragmentSender::pump() {
  // Bounded, so requests and allocations queued behind a long pump are not starved; the caller re-posts.
  // Bounded in blocks and bytes: the pattern and CRC of 64 blocks of 1 MiB kept the thread from its status
  // reports for long enough to look dead on a loaded machine (measured by the benchmark). And in time: on a
  // slow machine (an emulated guest under a sanitizer) 4 MiB of pattern took longer than a heartbeat.
  constexpr std::size_t kBlocksPerPump = 64;
  constexpr std::uint64_t kBytesPerPump = 4u << 20;
  constexpr auto kTimePerPump = std::chrono::milliseconds(5);
  std::size_t blocks = 0;
  const std::uint64_t bytes_at_start = bytes_sent_;
  const auto started = std::chrono::steady_clock::now();
  for (;;) {
    leave_round_when_dry();  // each queue joins once per spell of work: amortised in its blocks
    bool work = false;
    bool progress = false;
    const std::size_t n = round_.size();
    for (std::size_t k = 0; k < n; ++k) {
      BuQueue& q = queues_[round_[(next_queue_ + k) % n]];
      if (q.batches.empty()) continue;
      work = true;
      if (outbox_.waiting(q.bu) != 0) continue;
      const std::size_t sent = send_blocks(q, std::min(blocks_per_send_, kBlocksPerPump - blocks),
                                           bytes_at_start + kBytesPerPump);
      if (sent == 0) {
        ++pool_waits_;
        return Progress::waiting_for_pool;
      }
      progress = true;
      blocks += sent;
      if (blocks >= kBlocksPerPump || bytes_sent_ - bytes_at_start >= kBytesPerPump ||
          std::chrono::steady_clock::now() - started >= kTimePerPump) {
        next_queue_ = (next_queue_ + k + 1) % n;
        return Progress::more;
      }
    }
    if (n != 0) next_queue_ = (next_queue_ + 1) % n;
    if (!work) return Progress::idle;
    if (!progress) return Progress::waiting_for_peer;
  }
}

}  // namespace daqx::evb::readout
