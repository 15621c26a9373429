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
#include "daqx/api/counter_set.hpp"
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

  // Published: this run's counts, restarted as each run starts ...
  struct RunCounters : CounterSet {
    Counter events_assigned{*this, "events_assigned", "events given to builder units this run"};
    Counter events_completed{*this, "events_completed", "events the builder units built and gave back"};
    Counter events_lost{*this, "events_lost", "events held by builder units that were dropped"};
    Counter events_incomplete{*this, "events_incomplete", "completed events built without a contributor"};
    Counter events_corrupt{*this, "events_corrupt", "completed events that failed the integrity checks"};
    Counter events_in_flight{*this, "events_in_flight", "events assigned and not yet given back", Metric::Kind::gauge};
    Counter requests{*this, "requests", "requests received from builder units"};
    Counter stale_requests{*this, "stale_requests", "requests refused (other generation): answered with a reset"};
    Counter unexpected_discards{*this, "unexpected_discards",
                                "discards of events not out to that BU (0 unless an event was built twice)"};
    Counter bu_drops{*this, "bu_drops", "builder units dropped (silent, restarted, or holding events at a drain timeout)"};
    Counter bu_readmissions{*this, "bu_readmissions", "dropped builder units taken in again"};
    Counter ru_downs{*this, "ru_downs", "readout units declared down"};
    Counter drained{*this, "drained", "1 when stopping and every assigned event is completed or lost",
                    Metric::Kind::gauge};  // 1 before the first run
  };
  // ... and, kept across runs, how the units and the batches stand (published from the dispatch thread) and what
  // was refused.
  struct Gauges : CounterSet {
    Counter events_per_request{*this, "events_per_request",
                               "events per batch now: eventsPerRequest, or sized from the RUs' super-fragment bytes "
                               "(batchBytes)",
                               Metric::Kind::gauge};
    Counter credits_queued{*this, "credits_queued", "free BU slots waiting for events", Metric::Kind::gauge};
    Counter bus_alive{*this, "bus_alive", "builder units taking part", Metric::Kind::gauge};
    Counter rus_alive{*this, "rus_alive", "readout units taking part", Metric::Kind::gauge};
    Counter no_builder_left{*this, "no_builder_left",
                            "1 while every builder unit has been dropped and none taken in again (the status reason "
                            "says why)",
                            Metric::Kind::gauge};
    Counter waiting_for_rus{*this, "waiting_for_rus", "1 while assignment waits for every RU to report",
                            Metric::Kind::gauge};
    Counter malformed_frames{*this, "malformed_frames", "frames that did not decode or came from an unknown unit"};
  };
  RunCounters run_counters_;
  Gauges gauges_;
  apps::RateMeter event_rate_;
};

}  // namespace daqx::evb::evm
