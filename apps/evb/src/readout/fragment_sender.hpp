// The sending side of a readout unit (an RU, or the EvM for its trigger fragments): turns assignments into
// blocks of super-fragment pieces, read from the unit's data source (readout/data_source.hpp), for their BUs. One
// queue per BU (CMS's BUproxy), served round-robin one send at a time, so a BU that cannot take data does not
// hold up the others (the round goes over the queues with work only: a partition of many BUs costs no more per
// block than one of two). A send is a batch of up to blocksPerSend blocks for one BU (a super-fragment's blocks,
// or several super-fragments'), handed over in one ApplicationContext::send_batch through the outbox; the blocks
// that will be full are allocated together (allocate_frames), filled straight from the application's pool and
// handed to the transport (no copy after the source writes them).
// Dispatch thread only.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <unordered_map>
#include <vector>

#include "daqx/evb/protocol.hpp"
#include "daqx/api/application.hpp"
#include "common/outbox.hpp"
#include "readout/data_source.hpp"

namespace daqx::evb::readout {

class FragmentSender {
 public:
  FragmentSender(ApplicationContext& context, Outbox& outbox) : context_(context), outbox_(outbox) {}

  // source must outlive the sender's queues (start_run and clear forget them). blocks_per_send: the most blocks
  // of one BU sent in one batch, 1..kMaxBatchFrames.
  void configure(const DataSource& source, std::size_t block_size, std::size_t blocks_per_send) {
    clear();
    source_ = &source;
    block_size_ = block_size;
    blocks_per_send_ = std::clamp<std::size_t>(blocks_per_send, 1, kMaxBatchFrames);
  }
  void start_run(std::uint32_t run);  // forgets every queue
  void reset_counters() noexcept {
    fragments_sent_ = bytes_sent_ = blocks_sent_ = pool_waits_ = 0;
  }

  void add(const Assignment& assignment);
  // Drops the work queued for bu of generations below `generation` (the BU was dropped); returns the
  // events dropped.
  std::uint64_t drop_bu(Tid bu, std::uint32_t generation);
  void clear();

  enum class Progress { idle, more, waiting_for_pool, waiting_for_peer };
  // Sends blocks until every queue is empty, or it has sent a bounded number (more: call again soon), or it
  // must wait (pool exhausted, or every BU with work would block).
  Progress pump();

  // The newest generation of bu this sender was given work for (0: none).
  std::uint32_t generation_of(Tid bu) const noexcept {
    const auto it = queue_of_.find(bu);
    return it == queue_of_.end() ? 0 : queues_[it->second].latest_generation;
  }

  std::uint64_t events_queued() const noexcept { return events_queued_; }  // assigned, not yet fully sent
  std::uint64_t fragments_sent() const noexcept { return fragments_sent_; }
  std::uint64_t bytes_sent() const noexcept { return bytes_sent_; }  // super-fragment bytes
  std::uint64_t blocks_sent() const noexcept { return blocks_sent_; }
  std::uint64_t pool_waits() const noexcept { return pool_waits_; }

 private:
  struct BuQueue {
    Tid bu = kNoTid;
    std::uint32_t dropped_below = 0;    // generations below this are gone
    std::uint32_t latest_generation = 0;
    std::deque<Assignment> batches;     // front: being sent
    std::uint32_t next_event = 0;       // index in the front batch of the event being written
    bool event_started = false;         // cursor holds that event's super-fragment, partly written
    std::uint32_t written = 0;          // of that super-fragment
    std::unique_ptr<SuperFragmentCursor> cursor;
    bool in_round = false;              // listed in round_
  };
  BuQueue& queue_for(Tid bu);
  // Fills blocks for q and sends them as one batch: at most max_blocks, and none more once bytes_sent() reaches
  // bytes_until. Returns how many; 0 when the pool had no block.
  std::size_t send_blocks(BuQueue& q, std::size_t max_blocks, std::uint64_t bytes_until);
  // Writes the next block of q's front batch into frame (room for `bytes`, frame header included).
  OutgoingFrame fill_block(BuQueue& q, mem::Ref&& frame, std::size_t bytes);
  // What q's front batch still needs, pieces' headers and padding included, counted up to `enough`.
  std::size_t bytes_left_in_batch(const BuQueue& q, std::size_t enough) const noexcept;

  ApplicationContext& context_;
  Outbox& outbox_;
  const DataSource* source_ = nullptr;  // set by configure, before any add
  std::size_t block_size_ = 65536;
  std::size_t blocks_per_send_ = 1;
  std::uint32_t run_ = 0;
  // Leaves round_ the queues that ran dry, keeping the order of the others and the turn.
  void leave_round_when_dry();

  // A send's blocks and the full-sized ones allocated together, kept here rather than built on every send
  // (64 Refs each); empty between sends.
  std::array<OutgoingFrame, kMaxBatchFrames> blocks_;
  std::array<mem::Ref, kMaxBatchFrames> full_;
  std::vector<BuQueue> queues_;
  std::unordered_map<Tid, std::size_t> queue_of_;  // a BU's TID -> its queue
  std::vector<std::size_t> round_;                 // the queues with work (and some just run dry), in turn order
  std::size_t next_queue_ = 0;                     // round-robin position in round_
  std::uint64_t events_queued_ = 0;
  std::uint64_t fragments_sent_ = 0;
  std::uint64_t bytes_sent_ = 0;
  std::uint64_t blocks_sent_ = 0;
  std::uint64_t pool_waits_ = 0;
};

}  // namespace daqx::evb::readout
