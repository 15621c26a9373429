// The RU's proxy of the EvM (CMS's readout unit side of the EvM): it owns all messaging to and from the EvM,
// turning Allocate and Control frames into work for the RU, sending RuStatus, reporting lost builders and
// watching the EvM's liveness. Dispatch thread only.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "daqx/api/application.hpp"
#include "daqx/api/counter_set.hpp"
#include "daqx/evb/protocol.hpp"
#include "common/evm_loss_policy.hpp"
#include "common/dispatch.hpp"
#include "common/outbox.hpp"
#include "ru/bu_proxy.hpp"
#include "ru/ru_configuration.hpp"

namespace daqx::evb::ru {

class EvmProxy {
 public:
  // What the RU does when the EvM's messages ask for it.
  struct Unit {
    std::function<bool()> running;   // frames are ignored between runs
    std::function<void()> end_run;   // the EvM failed the run or this RU: stop sending
  };
  // Published; read by RU::report. This run's messages (restarted at start()) ...
  struct Counters : CounterSet {
    Counter allocations{*this, "allocations", "allocate messages received from the EvM"};
    Counter bu_downs{*this, "bu_downs", "builder units the EvM dropped"};
    Counter stale_frames{*this, "stale_frames", "allocations of another run, ignored"};
    Counter malformed{*this, "malformed_frames", "frames that did not decode or came from another than the EvM"};
    Counter status_reports{*this, "status_reports", "status reports sent to the EvM"};
    Counter status_retries{*this, "status_retries",
                           "status reports that could not go at once (no block, or the connection to the EvM busy), "
                           "tried again"};
  };
  // ... and the EvM's run as last heard, kept across runs.
  struct Gauges : CounterSet {
    Counter run{*this, "run", "the EvM's run number as last heard", Metric::Kind::gauge};
  };

  EvmProxy(ApplicationContext& context, const RuConfiguration& config, Outbox& outbox, BuProxy& builders,
           Unit unit);

  // A new run of this RU: nothing heard, a new incarnation, counters zeroed.
  void start();
  // Fails the run's part this RU plays if the EvM fell silent; false then.
  bool check_evm_alive(Clock::time_point now);
  // Sends a status report if heartbeatInterval has passed since the last one went out.
  void send_status_if_due(Clock::time_point now);
  void send_status();
  // Tells the EvM this RU lost its connection to bu (of that generation) and dropped its work.
  void report_lost_builder(Tid bu, std::uint32_t generation);

  const Counters& counters() const noexcept { return counters_; }
  const Gauges& gauges() const noexcept { return gauges_; }
  // Steady clock ticks of the last status report that went out (0: none yet).
  Clock::rep last_status_sent() const noexcept { return last_status_sent_.load(std::memory_order_relaxed); }

 private:
  void on_allocate(Frame&& frame);
  void on_control(Frame&& frame);

  ApplicationContext& context_;
  const RuConfiguration& config_;
  Outbox& outbox_;
  BuProxy& builders_;
  Unit unit_;

  EvmLossPolicy evm_loss_;
  std::uint32_t run_ = 0;  // the EvM's run, from its frames
  std::uint64_t incarnation_ = 0;
  Clock::time_point last_status_{};
  Counters counters_;
  Gauges gauges_;
  std::atomic<Clock::rep> last_status_sent_{0};
};

}  // namespace daqx::evb::ru
