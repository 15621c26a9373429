// evb::EvM, the event manager: numbers events (as fast as the builders ask, or at a trigger rate), gives
// batches of them to the BUs' free slots, highest priority first, round-robin among equals, tells every RU
// which BU gets which events, and contributes the trigger fragment itself (it is also a readout unit).
// It watches BUs and RUs: a silent BU is dropped and its events counted lost; a silent RU fails the run or,
// by policy, makes the BUs build without it.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "daqx/apps/rate_meter.hpp"
#include "daqx/evb/protocol.hpp"
#include "daqx/api/application.hpp"
#include "dispatch.hpp"
#include "evm/event_assigner.hpp"
#include "fragment_sender.hpp"
#include "outbox.hpp"

namespace daqx::evb {

enum class RuFailurePolicy { fail, incomplete };

struct EvmConfiguration {
  std::vector<Tid> bus;                 // builder units, from the "bus" selector
  std::vector<Tid> rus;                 // readout units, from the "rus" selector
  std::uint32_t events_per_request = 8; // events per resource slot (batch)
  double trigger_rate = 0;              // events per second; 0: as fast as the BUs ask
  double batch_wait = 0.01;             // s a slot waits for a full batch before a smaller one goes (slow trigger)
  std::uint64_t max_events = 0;         // events to assign in the run, then stop assigning; 0: no limit
  FragmentShape trigger{1, 1024, 0, 1u << 24, true, 0};  // the EvM's own fragment: one source, 1 KiB
  std::size_t block_size = 65536;       // bytes per fragment block
  double bu_timeout = 1.0;              // s without a request before a BU is dropped
  double ru_timeout = 5.0;              // s without a status before an RU is declared down (it fails the run: be patient)
  double heartbeat_interval = 0.1;      // s between the EvM's heartbeats
  double drain_timeout = 5;             // s stop() waits for the BUs to finish the assigned events
  RuFailurePolicy ru_failure = RuFailurePolicy::fail;
};

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
  // A builder unit as the EvM sees it (CMS's BUproxy).
  struct BuProxy {
    Tid tid = kNoTid;
    enum class State { unknown, alive, dropped } state = State::unknown;
    std::uint32_t generation = 0;  // the BU's current generation; credits of others are refused
    std::uint64_t incarnation = 0;
    Clock::time_point last_heard{};
    Clock::time_point last_reset{};
    struct Credit {
      std::uint32_t slot;
      Clock::time_point since;
    };
    std::deque<Credit> credits;
    std::uint16_t priority = 0;
    std::uint16_t output_state = 0;
    struct Batch {
      std::uint64_t first_event;
      std::uint32_t count;
    };
    std::map<std::uint32_t, Batch> outstanding;  // slot -> batch assigned to it
    std::uint64_t events_in_flight = 0;
    std::string dropped_because;  // the last drop's reason, for the status when no BU is left
    // Published for report().
    std::unique_ptr<Counter> assigned = std::make_unique<Counter>(0);
    std::unique_ptr<Counter> completed = std::make_unique<Counter>(0);
    std::unique_ptr<Counter> lost = std::make_unique<Counter>(0);
    std::unique_ptr<Counter> drops = std::make_unique<Counter>(0);
    std::unique_ptr<Counter> published_state = std::make_unique<Counter>(0);  // 0 unknown, 1 alive, 2 dropped
    std::unique_ptr<Counter> published_credits = std::make_unique<Counter>(0);
    std::unique_ptr<Counter> published_output_state = std::make_unique<Counter>(0);
  };
  struct RuProxy {
    Tid tid = kNoTid;
    enum class State { unknown, alive, down } state = State::unknown;
    std::uint64_t incarnation = 0;
    Clock::time_point last_heard{};
    std::vector<Assignment> pending;  // assignments not yet sent in an Allocate
    std::unique_ptr<Counter> published_state = std::make_unique<Counter>(0);  // 0 unknown, 1 alive, 2 down
  };

  // Dispatch thread.
  void on_request(Frame&& frame);
  void on_ru_status(Frame&& frame);
  void on_unit_report(Frame&& frame);
  void handle_failed_sends();
  void tick();
  void assign();
  void schedule_assign();
  BuProxy* pick_builder();
  void flush_allocations();
  void drop_builder(BuProxy& bu, const std::string& why);
  void ru_down(RuProxy& ru, const std::string& why);
  void send_control(Tid target, const Control& control, bool queue);
  void broadcast(const Control& control);
  void pump_fragments();
  void publish();
  BuProxy* find_bu(Tid tid);
  RuProxy* find_ru(Tid tid);
  bool rus_ready() const;
  void start_run(std::uint32_t run);

  EvmConfiguration config_;
  Outbox outbox_;
  FragmentSender trigger_sender_;
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
  EventAssigner assigner_;
  bool pump_posted_ = false;
  bool assign_posted_ = false;
  std::vector<BuProxy> bus_;
  std::vector<RuProxy> rus_;
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
  Counter trigger_bytes_{0};
  std::atomic<bool> waiting_for_rus_{false};
  apps::RateMeter event_rate_;
};

}  // namespace daqx::evb
