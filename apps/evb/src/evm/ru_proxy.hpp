// A readout unit as the EvM sees it, and the EvM's messaging to it: its state, incarnation, liveness, the
// assignments queued for it and their Allocate frames, and the control frames sent to it.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

#include "daqx/api/application.hpp"
#include "daqx/evb/protocol.hpp"
#include "dispatch.hpp"
#include "evm/unit_link.hpp"

namespace daqx::evb {

class RuProxy {
 public:
  enum class State { unknown, alive, down };

  RuProxy(Tid tid, ApplicationContext& context, Outbox& outbox) : link_(tid, context, outbox) {}

  Tid tid() const { return link_.tid(); }
  State state() const { return state_; }
  std::uint64_t incarnation() const { return incarnation_; }
  Clock::time_point last_heard() const { return last_heard_; }

  // A new run: not yet heard, nothing queued.
  void start_run();
  // After a gap in the EvM's own running: its silence meanwhile is not the RU's.
  void excuse_silence(Clock::time_point now) { last_heard_ = std::max(last_heard_, now); }
  // Its first status of the run: it takes part, in this incarnation.
  void take_in(std::uint64_t incarnation) {
    state_ = State::alive;
    incarnation_ = incarnation;
  }
  void heard(Clock::time_point now) { last_heard_ = now; }
  // Down for the rest of the run: what was queued or waits in the outbox for it goes.
  void go_down();

  // Queues an assignment for the next Allocate (only while it takes part).
  void queue(const Assignment& assignment) {
    if (state_ == State::alive) pending_.push_back(assignment);
  }
  // Forgets the queued assignments of a dropped BU.
  void forget_bu(Tid bu);
  // Sends the queued assignments as Allocate frames; what finds no block goes with the next flush.
  void flush_allocations(std::uint32_t run);

  // Control frames to this RU; false when out of blocks and not sent.
  bool send_control(std::uint32_t run, const Control& control, bool queue) const {
    return link_.send_control(run, control, queue);
  }

  // The gauge for report(), from the dispatch thread.
  void publish();
  void report(MetricSink& sink) const;

 private:
  UnitLink link_;
  State state_ = State::unknown;
  std::uint64_t incarnation_ = 0;
  Clock::time_point last_heard_{};
  std::vector<Assignment> pending_;  // assignments not yet sent in an Allocate
  std::unique_ptr<Counter> published_state_ = std::make_unique<Counter>(0);  // 0 unknown, 1 alive, 2 down
};

}  // namespace daqx::evb
