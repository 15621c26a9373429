// evb::bu::EvmProxy, the BU's side of the messaging with the EvM: the run and generation it last heard, the
// requests that offer free slots (credits, priority) and give finished batches back, the discards waiting for
// the next request, and the EvM-loss policy (common/evm_loss_policy) that fails the BU when the EvM falls
// silent. The slots are the slot table's: the proxy asks it for free ones to offer and marks those it offered.
// Dispatch thread only.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "bu/bu_configuration.hpp"
#include "bu/resource_manager.hpp"
#include "bu/slot_table.hpp"
#include "common/evm_loss_policy.hpp"
#include "daqx/api/application.hpp"
#include "daqx/api/counter_set.hpp"
#include "daqx/evb/protocol.hpp"
#include "common/dispatch.hpp"
#include "common/outbox.hpp"

namespace daqx::evb::bu {

class EvmProxy {
 public:
  // References into the BU that owns the proxy: they outlive it.
  EvmProxy(const BuConfiguration& config, Outbox& outbox, ApplicationContext& context, SlotTable& slots)
      : config_(config), outbox_(outbox), context_(context), slots_(slots) {}

  // Enable: a new incarnation of the BU, no run heard yet, nothing to give back.
  void start(std::uint64_t incarnation);
  // Any message from the EvM.
  void heard(Clock::time_point now) noexcept { loss_.heard(now); }
  // The EvM started another run (generation 0 until its reset).
  void new_run(std::uint32_t run);
  // A reset of the EvM with another generation (the BU has let its slots go): taken and answered.
  void take_reset(std::uint32_t generation);
  void run_ended() noexcept { loss_.set_run_ended(true); }
  // The reason to fail when the EvM is presumed dead, otherwise nothing.
  std::optional<std::string> check_loss(Clock::time_point now) { return loss_.check(now, config_.evm, config_.evm_timeout); }

  std::uint32_t run() const noexcept { return run_; }
  std::uint32_t generation() const noexcept { return generation_; }
  // Blocks of this run and generation belong to the slots offered in it; generation 0 is before any reset.
  bool current(std::uint32_t run, std::uint32_t generation) const noexcept {
    return run == run_ && generation == generation_ && generation_ != 0;
  }

  // A finished batch, given back with the next request.
  void give_back(const Discard& discard) { discards_.push_back(discard); }
  // Slots let go: their batches are not given back.
  void drop_discards() noexcept { discards_.clear(); }

  // Offers free slots (as many as the output's backlog allows) and gives back finished batches. A heartbeat
  // request goes even with nothing to say.
  void request(bool heartbeat);
  // Slots finished together (one dispatch round) go back in one request.
  void schedule_request();
  // The ticker: a heartbeat request when none went for requestInterval, otherwise only what there is to say.
  void tick(Clock::time_point now) { request(now - last_request_ >= seconds(config_.request_interval)); }

  // Published (by the BU): this run's messages, restarted at enable.
  struct RunCounters : CounterSet {
    Counter requests_sent{*this, "requests_sent", "requests sent to the EvM"};
    Counter resets{*this, "resets", "resets received from the EvM"};
  };
  // ... and what the last request said, kept across runs.
  struct Gauges : CounterSet {
    Counter slot_limit{*this, "slot_limit", "slots that may be offered or building now (output backlog, memory budget)",
                       Metric::Kind::gauge};
    Counter run{*this, "run", "the EvM's run number as last heard", Metric::Kind::gauge};
  };
  const RunCounters& run_counters() const noexcept { return run_counters_; }
  const Gauges& gauges() const noexcept { return gauges_; }
  // The output state the last request told the EvM (evb::output_state).
  std::size_t output_state() const noexcept { return output_state_.load(std::memory_order_relaxed); }

 private:
  const BuConfiguration& config_;
  Outbox& outbox_;
  ApplicationContext& context_;
  SlotTable& slots_;

  bool request_posted_ = false;
  EvmLossPolicy loss_;
  std::uint32_t run_ = 0;
  std::uint32_t generation_ = 0;
  std::uint64_t incarnation_ = 0;
  Clock::time_point last_request_{};
  std::vector<Discard> discards_;  // given back with the next request

  RunCounters run_counters_;
  Gauges gauges_;
  std::atomic<std::size_t> output_state_{0};  // reported as a state set, not a counter
};

}  // namespace daqx::evb::bu
