// evb::bu::EventStream, the BU's stream `events`: every built event is offered to the stream's subscribers
// (docs/monitoring.md) before its slot goes on to the output, as its event record (docs/evb-files.md) made of a
// header block and views of the received blocks, without copying a fragment (unless the receive pool has no view
// left), and only for an event someone takes. A `block` subscriber that is full keeps the slot here (it counts as waiting for the output, so the BU
// throttles and blocks as for a slow output) until the publisher says it has room; nothing is dropped for it.
// With nobody subscribed a slot costs one check per event. Dispatch thread only.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <vector>

#include "bu/built_event_record.hpp"
#include "bu/slot_table.hpp"
#include "daqx/api/application.hpp"
#include "daqx/api/counter_set.hpp"
#include "daqx/streams/publisher.hpp"

namespace daqx::evb::bu {

inline constexpr const char* kEventStreamName = "events";

class EventStream {
 public:
  // Every event of the slot was offered: the slot goes on to the output.
  using Offered = std::function<void(std::uint32_t index)>;

  // References into the BU that owns it: they outlive it.
  EventStream(ApplicationContext& context, SlotTable& slots, const std::vector<Tid>& contributors, Offered offered);

  // Configure: the stream is offered (again: a configure after halt); a sampled subscriber's records go in
  // batches at most `batch_interval` apart (streamBatchInterval: a monitor wakes, and acknowledges, once per
  // batch), the BU's tick sending what waited longer.
  void configure(std::chrono::milliseconds batch_interval);
  // Enable: nothing withheld in this run yet.
  void reset_counts() noexcept { run_counters_.reset(); }
  // A built slot: its events are offered in order, then it goes on (offered(index)), now or once a block
  // subscriber has made room. Its state is output meanwhile.
  void take(std::uint32_t index);
  // The BU's tick: slots waiting for a block subscriber are offered again, as on the publisher's on_ready. A
  // block subscriber that goes away (lost, unsubscribed) makes room without acknowledging anything.
  void tick() {
    if (!waiting_.empty()) offer_waiting();
    publisher_.send_held();
  }
  // Stop and halt, once the output is stopped: the records held for a batch are sent, and the slots still waiting
  // for a block subscriber are let go without being offered further (finished(index) for each); their events are
  // counted withheld.
  void release(const std::function<void(std::uint32_t index)>& finished);
  // Halt: every subscription ends (the subscribers are told, and subscribe again when the BU is back).
  void halt();

  void report(MetricSink& sink) const;

 private:
  // Offers the waiting slots' events from where the first stopped, until a block subscriber is full.
  void offer_waiting();
  // The record of event `event` of the slot as a chain: header block, then views of the pieces (a copy of a
  // piece when the receive pool has no view left) and zero padding. Empty when the BU's pool has no block now.
  mem::Ref make_record(const BuilderSlot& slot, std::uint32_t event);

  ApplicationContext& context_;
  SlotTable& slots_;
  const std::vector<Tid>& contributors_;
  Offered offered_;
  streams::Publisher publisher_;
  streams::StreamId stream_{};

  std::deque<std::uint32_t> waiting_;  // slots whose events are being offered, in the order they were built
  std::uint32_t next_event_ = 0;       // of the first waiting slot: the next one to offer
  bool offering_ = false;              // offer_waiting() is running
  RecordPieces pieces_;                // reused for every record
  std::vector<mem::Ref> chain_;        // the blocks of the record being made, linked back to front

  struct RunCounters : CounterSet {
    Counter withheld{*this, "stream_events_withheld",
                     "built events let go at stop or halt while they waited for a block subscriber (not output)"};
    Counter pieces_copied{*this, "stream_pieces_copied",
                          "pieces of streamed events copied because the receive pool had no view left"};
  };
  RunCounters run_counters_;
};

}  // namespace daqx::evb::bu
