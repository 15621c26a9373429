// The sending side of a readout unit's proxy of the BUs, shared by the RU and the EvM (for its trigger
// fragment): a FragmentSender pumped in bounded rounds on the dispatch thread, the rest posted as a task, the
// work of a dropped BU forgotten, and what it sent published for report(). Dispatch thread only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <utility>

#include "common/dispatch.hpp"
#include "common/outbox.hpp"
#include "daqx/api/application.hpp"
#include "daqx/api/counter_set.hpp"
#include "daqx/evb/protocol.hpp"
#include "readout/data_source.hpp"
#include "readout/fragment_sender.hpp"

namespace daqx::evb::readout {

// The most blocks for one BU sent in one batch (ApplicationContext::send_batch), by default: a super-fragment that
// spans two blocks goes in one send. Larger batches of blocks (16) measured slower over pttcp on this machine
// (2x2, 4 KiB and 64 KiB super-fragments: build latency up, throughput down by half), the BUs' blocks no longer
// interleaved; a block already amortises the per-frame costs over at least 4 KiB.
inline constexpr std::size_t kDefaultBlocksPerSend = 2;
// The parameter of a readout unit (RU, EvM) that sets it: blocksPerSend, 1..kMaxBatchFrames.
ParamSpec blocks_per_send_parameter();

class FragmentPump {
 public:
  // Told after every round of sending, before the counters are published: the unit looks at the sends that
  // failed (the RU reports a BU whose connection was lost).
  using AfterRound = std::function<void()>;
  // Published after each round, for the unit's report(); restarted at start().
  struct Counters : CounterSet {
    Counter fragments_sent{*this, "fragments_sent", "super-fragments sent (one per event)"};
    Counter bytes_sent{*this, "bytes_sent", "super-fragment bytes sent"};
    Counter blocks_sent{*this, "blocks_sent", "fragment blocks sent"};
    Counter events_queued{*this, "fragments_in_flight", "events assigned and not yet completely sent",
                          Metric::Kind::gauge};
    Counter frames_waiting{*this, "blocks_waiting", "blocks waiting for a BU that cannot take them yet",
                           Metric::Kind::gauge};
    Counter events_dropped{*this, "events_dropped", "events not sent because their BU was dropped"};
    Counter pool_waits{*this, "pool_waits", "times sending paused for free pool blocks (back-pressure)"};
    Counter would_blocks{*this, "sends_deferred", "sends refused for lack of room, queued and sent later"};
    Counter send_errors{*this, "send_errors", "frames (blocks or status reports) lost with their connection"};
  };

  // outbox: the unit's, through which the blocks go (and what else the unit sends).
  FragmentPump(ApplicationContext& context, Outbox& outbox, AfterRound after_round = {})
      : context_(context), outbox_(outbox), sender_(context, outbox), after_round_(std::move(after_round)) {}

  // Reads super-fragments from source (the unit's, outliving the sending) in blocks of block_size bytes, sent
  // to a BU blocks_per_send at a time at most.
  void configure(const DataSource& source, std::size_t block_size, std::size_t blocks_per_send) {
    sender_.configure(source, block_size, blocks_per_send);
  }
  // Enable: sending allowed, nothing queued, counters zeroed.
  void start();
  // Nothing more is sent; whatever was queued is forgotten.
  void stop();
  bool running() const noexcept { return running_; }
  // The EvM started run `run`: whatever was queued belongs to the old one.
  void start_run(std::uint32_t run) { sender_.start_run(run); }

  void add(const Assignment& assignment) { sender_.add(assignment); }
  // bu was dropped: its work of generations below `generation`, and what waits in the outbox for it, goes.
  void drop(Tid bu, std::uint32_t generation);
  // The newest generation of bu that work was queued for (0: none).
  std::uint32_t generation_of(Tid bu) const noexcept { return sender_.generation_of(bu); }
  // One bounded round of sending (FragmentSender::pump); the rest is posted as a task.
  void pump();

  std::uint64_t fragments_sent() const noexcept { return sender_.fragments_sent(); }
  std::uint64_t bytes_sent() const noexcept { return sender_.bytes_sent(); }
  const Counters& counters() const noexcept { return counters_; }

 private:
  void schedule_pump();

  ApplicationContext& context_;
  Outbox& outbox_;
  FragmentSender sender_;
  AfterRound after_round_;
  bool running_ = false;
  bool pump_posted_ = false;
  Counters counters_;
};

}  // namespace daqx::evb::readout
