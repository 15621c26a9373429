// evb::bu::EventAssembly, the event builder proper: pieces of super-fragments taken from the blocks the EvM and the
// RUs send (held, not copied), events built once every contributor that is not down gave its super-fragment
// (incomplete when an RU is down), each checked and timed; with the counts of what it received and built.
// Each event counts the super-fragments it still awaits, so an arriving one costs the same whatever the number
// of contributors, and an RU going down costs one look at each event in flight.
// Dispatch thread only (its counts and latency summary are read by report()).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "bu/bu_configuration.hpp"
#include "bu/evm_proxy.hpp"
#include "bu/slot_table.hpp"
#include "daqx/api/application.hpp"
#include "daqx/api/counter_set.hpp"
#include "daqx/evb/protocol.hpp"
#include "common/dispatch.hpp"

namespace daqx::evb::bu {

class EventAssembly {
 public:
  // Every event of the slot is built: it goes to the output (index: the slot's).
  using SlotBuilt = std::function<void(std::uint32_t index)>;

  // What it received and built this run (restarted at enable); written by the dispatch thread only.
  struct Counts : CounterSet {
    Counter events_built{*this, "events_built", "events built (incomplete and corrupt ones included)"};
    Counter bytes_built{*this, "bytes_built", "bytes of the events built"};
    Counter events_incomplete{*this, "events_incomplete", "events built without a contributor that was down"};
    Counter events_corrupt{*this, "events_corrupt", "events with a super-fragment that failed the checks"};
    Counter fragments_received{*this, "fragments_received", "complete super-fragments received"};
    Counter blocks_received{*this, "blocks_received", "fragment blocks received"};
    Counter duplicate_pieces{*this, "duplicate_pieces",
                             "pieces of a super-fragment already complete (0 unless sent twice)"};
    Counter stale_blocks{*this, "stale_blocks", "blocks of another run or generation, dropped"};
    Counter protocol_errors{*this, "protocol_errors", "blocks or pieces inconsistent with the slot or the batch"};
  };

  // References into the BU that owns it: they outlive it.
  EventAssembly(const BuConfiguration& config, ApplicationContext& context, SlotTable& slots,
                const std::vector<Tid>& contributors, const EvmProxy& evm, SlotBuilt built)
      : config_(config), context_(context), slots_(slots), contributors_(contributors), evm_(evm),
        built_(std::move(built)) {}

  // Enable: nothing received or built yet, no contributor down.
  void start();
  // A new run: down in the last run says nothing about this one.
  void new_run();
  // Fragments frames from contributor `contributor` (0: the EvM) that arrived together (a batch, or one frame),
  // taken in order; the counts of a batch are published once at its end. Returns how many
  // frames were malformed (a payload not whole in the frame's head, or shorter than a block header), not taken.
  std::size_t take_blocks(std::size_t contributor, std::span<Frame> frames);
  std::size_t take_block(std::size_t contributor, Frame&& frame) {
    return take_blocks(contributor, std::span<Frame>(&frame, 1));
  }
  // The EvM says contributor `contributor` is down: events that waited only for it are built, flagged incomplete.
  void contributor_down(std::size_t contributor);
  // The latency median and 99th percentile, at most once a second, from the samples since.
  void summarize_latencies(Clock::time_point now);

  const Counts& counts() const noexcept { return counts_; }
  const LatencyHistogram& build_latency() const noexcept { return build_latency_; }
  double latency_median_us() const noexcept { return latency_median_us_.load(std::memory_order_relaxed); }
  double latency_p99_us() const noexcept { return latency_p99_us_.load(std::memory_order_relaxed); }

 private:
  // What one batch received, published at its end.
  struct Received {
    std::uint64_t blocks = 0;
    std::uint64_t fragments = 0;
  };
  // One well-formed block; O(1) in the number of contributors, O(pieces) in the block.
  void take_one(std::size_t contributor, Frame& frame, Received& received);
  void start_building(BuilderSlot& slot, const BlockHeader& header);
  void build(BuilderSlot& slot, std::uint32_t index);

  const BuConfiguration& config_;
  ApplicationContext& context_;
  SlotTable& slots_;
  const std::vector<Tid>& contributors_;
  const EvmProxy& evm_;
  SlotBuilt built_;

  std::vector<bool> contributor_down_;  // by contributor index, this run
  std::uint32_t contributors_up_ = 0;    // contributors not down: what a new event awaits
  std::vector<double> latencies_;  // build latency samples (us) since the last publication
  Clock::time_point latency_published_{};
  std::uint32_t problems_logged_ = 0;

  Counts counts_;
  LatencyHistogram build_latency_;  // every event of this run, for /metrics (the median is for people)
  std::atomic<double> latency_median_us_{0};
  std::atomic<double> latency_p99_us_{0};
};

}  // namespace daqx::evb::bu
