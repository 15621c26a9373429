// A builder unit as the EvM sees it, and the EvM's messaging to it (CMS's BUproxy): its state, generation,
// credits (free slots) and their priority, the batches out to it, the counters published for it, and the
// control frames sent to it.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>

#include "daqx/api/application.hpp"
#include "daqx/api/counter_set.hpp"
#include "daqx/evb/protocol.hpp"
#include "common/dispatch.hpp"
#include "evm/unit_link.hpp"

namespace daqx::evb::evm {

class BuProxy {
 public:
  enum class State { unknown, alive, dropped };

  BuProxy(Tid tid, ApplicationContext& context, Outbox& outbox) : link_(tid, context, outbox) {}

  Tid tid() const { return link_.tid(); }
  State state() const { return state_; }
  std::uint32_t generation() const { return generation_; }
  std::uint64_t incarnation() const { return incarnation_; }
  std::uint64_t drops() const { return drops_; }
  const std::string& dropped_because() const { return dropped_because_; }
  std::uint64_t events_in_flight() const { return events_in_flight_; }
  std::size_t credits() const { return credits_.size(); }
  bool has_credit() const { return state_ == State::alive && !credits_.empty(); }
  std::uint16_t priority() const { return priority_; }
  Clock::time_point last_heard() const { return last_heard_; }
  Clock::time_point last_reset() const { return last_reset_; }

  // A new run: not yet heard, with a generation unique to the run, nothing out, counters at zero.
  void start_run(std::uint32_t run);
  // After a gap in the EvM's own running: its silence meanwhile is not the BU's.
  void excuse_silence(Clock::time_point now) { last_heard_ = std::max(last_heard_, now); }

  // The BU answered the reset: it takes part.
  void take_in() { state_ = State::alive; }
  // A reset goes to this incarnation: unknown until it answers with the generation the reset gives.
  void begin_readmission(std::uint64_t incarnation, Clock::time_point now);
  // Forgets its batches and credits; returns the events that were out to it, counted lost for it.
  std::uint64_t abandon_work();
  // Dropped for why: nothing of its current generation is taken any more.
  void mark_dropped(const std::string& why);

  // What a request of the current generation gave back.
  struct Returned {
    std::uint64_t completed = 0, incomplete = 0, corrupt = 0;
    std::uint64_t unexpected = 0;  // discards of batches not out to it, slots offered while their batch is out
  };
  // Takes a request: its priority and output state, the batches it completed (discards) and its free slots
  // (credits).
  Returned take_request(const Request& request, Clock::time_point now);

  // Gives count events from first_event to its front credit (has_credit() only).
  Assignment assign_front_credit(std::uint32_t count, std::uint64_t first_event);

  // Control frames to this BU; false when out of blocks and not sent.
  bool send_control(std::uint32_t run, const Control& control, bool queue) const {
    return link_.send_control(run, control, queue);
  }
  // The reset that takes it in: it takes part once it asks with the generation this names.
  Control reset(std::uint32_t run) const { return Control{ControlKind::reset, run, generation_, tid(), {}}; }

  // The gauges for report(), from the dispatch thread.
  void publish();
  void report(MetricSink& sink) const;

 private:
  struct Credit {
    std::uint32_t slot;
  };
  struct Batch {
    std::uint64_t first_event;
    std::uint32_t count;
  };

  UnitLink link_;
  State state_ = State::unknown;
  std::uint32_t generation_ = 0;  // the BU's current generation; credits of others are refused
  std::uint64_t incarnation_ = 0;
  Clock::time_point last_heard_{};
  Clock::time_point last_reset_{};
  std::deque<Credit> credits_;
  std::uint16_t priority_ = 0;
  std::uint16_t output_state_ = 0;
  std::map<std::uint32_t, Batch> outstanding_;  // slot -> batch assigned to it
  std::uint64_t events_in_flight_ = 0;
  std::string dropped_because_;  // the last drop's reason, for the status when no BU is left
  std::uint64_t drops_ = 0;  // this run

  // Published for report(), labelled with the BU (each behind a pointer: the proxies move when their vector grows).
  struct Counters : CounterSet {  // this run's, restarted at start_run (the credits follow at once)
    Counter assigned{*this, "bu_events_assigned", "events assigned to this BU"};
    Counter completed{*this, "bu_events_completed", "events this BU built and gave back"};
    Counter lost{*this, "bu_events_lost", "events lost when this BU was dropped"};
    Counter credits{*this, "bu_credits", "free slots of this BU waiting for events", Metric::Kind::gauge};
  };
  struct States {  // reported as state sets
    std::atomic<std::size_t> state{0};  // 0 unknown, 1 alive, 2 dropped
    std::atomic<std::size_t> output_state{0};
  };
  std::unique_ptr<Counters> counters_ = std::make_unique<Counters>();
  std::unique_ptr<States> published_ = std::make_unique<States>();
};

}  // namespace daqx::evb::evm
