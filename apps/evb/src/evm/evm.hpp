// evb::evm::EvM, the event manager: numbers events (as fast as the builders ask, or at a trigger rate), gives
// batches of them to the BUs' free slots, highest priority first, round-robin among equals, tells every RU
// which BU gets which events, and contributes the trigger fragment itself (it is also a readout unit).
// It watches BUs and RUs: a silent BU is dropped and its events counted lost; a silent RU fails the run or,
// by policy, makes the BUs build without it; more units out than the partition's <Expendable> rule for their
// class allows fail the run. A request, a status or a batch costs the same whatever the number
// of units: units are found by TID through an index, the BU to serve comes from a ranking kept as BUs change,
// the counts it reports are kept as units change, and the RUs read one log of assignments; only the ticker
// looks at every unit (once per period).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "daqx/apps/rate_meter.hpp"
#include "daqx/evb/protocol.hpp"
#include "daqx/api/application.hpp"
#include "common/dispatch.hpp"
#include "common/tid_index.hpp"
#include "evm/allocation_log.hpp"
#include "evm/bu_drop_policy.hpp"
#include "evm/bu_proxy.hpp"
#include "evm/batch_sizer.hpp"
#include "evm/builder_ranking.hpp"
#include "evm/builder_totals.hpp"
#include "evm/event_assigner.hpp"
#include "evm/evm_configuration.hpp"
#include "evm/ru_failure_policy.hpp"
#include "evm/ru_proxy.hpp"
#include "evm/unit_loss_allowance.hpp"
#include "readout/fragment_pump.hpp"
#include "readout/synthetic_source.hpp"
#include "common/outbox.hpp"

namespace daqx::evb::evm {

class EvM final : public Application {
 public:
  static std::vector<ParamSpec> parameters();
  explicit EvM(ApplicationContext& context);
  ~EvM() override;

  void configure() override;
  void enable() override;
  void stop() override;
  void halt() override;
  void report(MetricSink& sink) const override;

 private:
  // Dispatch thread.
  void on_request(Frame&& frame);
  void on_ru_status(Frame&& frame);
  void on_unit_report(Frame&& frame);
  void handle_failed_sends();
  void tick();
  void assign();
  void schedule_assign();
  void flush_allocations();
  void drop_builder(BuProxy& bu, const std::string& why);
  void ru_down(RuProxy& ru, const std::string& why);
  // The run fails: every unit is told (naming `subject`, the unit it fails for) and the EvM goes to Failed.
  void fail_run(Tid subject, const std::string& reason);
  template <class Unit>
  void send_to(const Unit& unit, const Control& control, bool queue);
  void resend_unsent_controls();
  void broadcast(const Control& control);
  void publish();
  BuProxy* find_bu(Tid tid);
  RuProxy* find_ru(Tid tid);
  std::size_t index_of(const BuProxy& bu) const { return static_cast<std::size_t>(&bu - bus_.data()); }
  // After anything done to a BU: its totals, ranking and gauges follow.
  void note(BuProxy& bu);
  // An RU changed state: the counts follow.
  void note(RuProxy& ru, RuProxy::State before);
  bool rus_ready() const { return rus_unknown_ == 0; }
  void start_run(std::uint32_t run);

  EvmConfiguration config_;
  Outbox outbox_;
  readout::SyntheticSource trigger_source_;  // the trigger fragment's data; read by trigger_pump_
  readout::FragmentPump trigger_pump_;       // the EvM is a readout unit too: its trigger fragments to the BUs
  Ticker ticker_;
  std::uint32_t runs_ = 0;  // enables so far; the run number

  // Dispatch thread only.
  bool running_ = false;    // between enable and the end of stop
  bool draining_ = false;   // stop() asked: assign nothing more
  bool failed_ = false;
  std::uint32_t run_ = 0;
  Clock::time_point run_start_{};
  Clock::time_point last_heartbeat_{};
  Clock::time_point last_tick_{};
  BuDropPolicy bu_drop_policy_;
  UnitLossAllowance bu_allowance_;  // BUs out of the run at once before the run fails
  UnitLossAllowance ru_allowance_;  // RUs down before the run fails (ruFailurePolicy incomplete)
  EventAssigner assigner_;
  BatchSizer batch_sizer_;
  bool assign_posted_ = false;
  std::vector<BuProxy> bus_;
  std::vector<RuProxy> rus_;
  TidIndex bu_index_;  // a BU's TID -> its place in bus_
  TidIndex ru_index_;  // an RU's TID -> its place in rus_
  BuilderRanking ranking_;  // the BUs holding credits, by priority: whose turn it is
  BuilderTotals bu_totals_;
  AllocationLog allocations_;  // this run's assignments, read by every RU proxy
  std::size_t rus_unknown_ = 0;  // RUs not yet heard this run (assignment waits for them)
  std::size_t rus_taking_part_ = 0;
  std::vector<std::size_t> rus_down_;  // this run, in the order they went down
  std::vector<std::pair<Tid, Control>> unsent_controls_;  // waiting for a pool block

  // Published.
  Counter events_assigned_{0};
  Counter events_completed_{0};
  Counter events_lost_{0};
  Counter events_incomplete_{0};
  Counter events_corrupt_{0};
  Counter events_in_flight_{0};
  Counter credits_queued_{0};
  Counter requests_{0};
  Counter stale_requests_{0};
  Counter unexpected_discards_{0};
  Counter bu_drops_{0};
  Counter bu_readmissions_{0};
  Counter ru_downs_{0};
  Counter bus_alive_{0};
  Counter rus_alive_{0};
  Counter no_builder_left_{0};  // 1 while every BU of the run has been dropped and none taken in again
  Counter malformed_{0};
  Counter drained_{1};
  Counter events_per_request_{0};  // the batch size now (published from the dispatch thread)
  std::atomic<bool> waiting_for_rus_{false};
  apps::RateMeter event_rate_;
};

}  // namespace daqx::evb::evm
