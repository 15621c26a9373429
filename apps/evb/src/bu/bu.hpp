// evb::bu::BU, a builder unit: offers its free resource slots to the EvM, assembles each event by holding
// references into the blocks the EvM and the RUs send (no copy), checks that every contributor gave exactly
// one super-fragment with the right event id, size and CRC, passes built events to its output (discard,
// files, or a consumer in the same executive), then gives the slot back. A slow output first throttles (fewer
// slots offered), then blocks (none). Its parts, by role: bu_configuration, resource_manager (slot limits and
// priority), slot_table (SlotTable: the slots and whether the BU runs, owned here and lent to the parts),
// evm_proxy (EvmProxy: messaging with the EvM), event_assembly (EventAssembly), event_stream (EventStream: the
// stream `events` every built event is offered to before the output) and output (EventOutput).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "bu/bu_configuration.hpp"
#include "bu/event_assembly.hpp"
#include "bu/event_stream.hpp"
#include "bu/evm_proxy.hpp"
#include "bu/output.hpp"
#include "bu/resource_manager.hpp"
#include "bu/slot_table.hpp"
#include "common/tid_index.hpp"
#include "daqx/api/application.hpp"
#include "daqx/api/counter_set.hpp"
#include "daqx/apps/rate_meter.hpp"
#include "daqx/evb/protocol.hpp"
#include "common/dispatch.hpp"
#include "common/outbox.hpp"

namespace daqx::evb::bu {

class BU final : public Application {
 public:
  static std::vector<ParamSpec> parameters();
  explicit BU(ApplicationContext& context);
  ~BU() override;

  void configure() override;
  void enable() override;
  void stop() override;
  void halt() override;
  void report(MetricSink& sink) const override;

 private:
  // Dispatch thread.
  void tick();
  void publish();

  void on_control(Frame&& frame);  // what the EvM says, acted on here and told to evm_
  void new_run(std::uint32_t run);
  void finish_slot(std::uint32_t index, std::uint32_t run, std::uint32_t generation);
  void abandon_slots();

  void on_fragments(std::span<Frame> frames);  // a batch: who sent each run of it, then handed to assembly_

  void slot_built(std::uint32_t index);  // handed to stream_, which hands it on to to_output()
  void to_output(std::uint32_t index);   // handed to output_ (discard, consumer, or files)
  void release_stream();                 // stop, halt: slots still waiting for a block subscriber let go

  BuConfiguration config_;
  Outbox outbox_;
  Ticker ticker_;
  std::vector<Tid> contributors_;  // EvM, then RUs
  TidIndex contributor_index_;     // a contributor's TID -> its position in contributors_

  // Dispatch thread only (the output's worker reads the slots it holds).
  SlotTable slots_;
  EvmProxy evm_;  // after what it refers to
  EventOutput output_;  // after what it refers to
  EventStream stream_;  // after what it refers to
  EventAssembly assembly_;  // after what it refers to

  // Published: the BU's own counts of a run (restarted at enable) and, kept across runs, what it refused and how
  // its slots are used (set by publish()).
  struct RunCounters : CounterSet {
    Counter events_abandoned{*this, "events_abandoned", "events given up unbuilt (reset by the EvM, or run over)"};
  };
  struct Gauges : CounterSet {
    Counter malformed_frames{*this, "malformed_frames", "frames that did not decode or came from an unknown unit"};
    Counter credits_outstanding{*this, "credits_outstanding", "slots offered to the EvM and not yet assigned",
                                Metric::Kind::gauge};
    Counter slots_building{*this, "slots_building", "slots whose events are being assembled", Metric::Kind::gauge};
    Counter slots_in_output{*this, "slots_in_output", "slots built and waiting for the output", Metric::Kind::gauge};
    Counter blocks_held{*this, "blocks_held", "received blocks held by events under construction", Metric::Kind::gauge};
    Counter batch_bytes{*this, "batch_bytes", "received block bytes a batch holds (largest recent)", Metric::Kind::gauge};
  };
  RunCounters run_counters_;
  Gauges gauges_;
  apps::RateMeter rate_;
};

}  // namespace daqx::evb::bu
