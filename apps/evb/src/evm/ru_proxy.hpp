// A readout unit as the EvM sees it, and the EvM's messaging to it: its state, incarnation, liveness, how far
// it has been told the run's assignments (the EvM's AllocationLog) and their Allocate frames, and the control
// frames sent to it.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "daqx/api/application.hpp"
#include "daqx/evb/protocol.hpp"
#include "common/dispatch.hpp"
#include "evm/allocation_log.hpp"
#include "evm/unit_link.hpp"

namespace daqx::evb::evm {

class RuProxy {
 public:
  enum class State { unknown, alive, down };

  RuProxy(Tid tid, ApplicationContext& context, Outbox& outbox) : link_(tid, context, outbox) {}

  Tid tid() const { return link_.tid(); }
  State state() const { return state_; }
  std::uint64_t incarnation() const { return incarnation_; }
  Clock::time_point last_heard() const { return last_heard_; }

  // A new run: not yet heard, told nothing (the log starts again).
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

  // Sends what it has not been told of the log as Allocate frames, while it takes part; what finds no block
  // goes with the next flush.
  void flush_allocations(std::uint32_t run, const AllocationLog& log);
  // How far it has been told.
  AllocationLog::Position told() const noexcept { return told_; }
  // The log forgot a dropped BU's assignments: the same place in it.
  void follow_forget(const AllocationLog& log) noexcept { told_ = log.where(told_); }

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
  AllocationLog::Position told_ = 0;  // the log's assignments before this one are sent
  // Reported as a state set; behind a pointer, as the proxies move when their vector grows.
  // 0 unknown, 1 alive, 2 down
  std::unique_ptr<std::atomic<std::size_t>> published_state_ = std::make_unique<std::atomic<std::size_t>>(0);
};

}  // namespace daqx::evb::evm
