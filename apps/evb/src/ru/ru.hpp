// evb::RU, a readout unit: in test mode its data sources are synthetic (sizes fixed or log-normal, a pattern
// and a CRC per source fragment); it sends each event's super-fragment to the BU the EvM names, in blocks
// filled straight from its pool. It reports to the EvM every heartbeatInterval and fails the run's part it
// plays if the EvM falls silent.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "daqx/apps/rate_meter.hpp"
#include "daqx/evb/protocol.hpp"
#include "daqx/api/application.hpp"
#include "common/evm_loss_policy.hpp"
#include "dispatch.hpp"
#include "superfragment_writer.hpp"
#include "fragment_sender.hpp"
#include "outbox.hpp"
#include "ru/ru_configuration.hpp"

namespace daqx::evb {

class RU final : public Application {
 public:
  static std::vector<ParamSpec> parameters();
  explicit RU(ApplicationContext& context);
  ~RU() override;

  void configure() override;
  void enable() override;
  void stop() override;
  void halt() override;
  void report(MetricSink& sink) const override;

 private:
  void on_allocate(Frame&& frame);
  void on_control(Frame&& frame);
  void tick();
  void schedule_pump();
  void pump();
  void send_status();
  void report_lost_builders();
  void end_run();

  RuConfiguration config_;
  Outbox outbox_;
  FragmentSender sender_;
  Ticker ticker_;

  // Dispatch thread only.
  bool running_ = false;
  EvmLossPolicy evm_loss_;
  bool pump_posted_ = false;
  std::uint32_t run_ = 0;   // the EvM's run, from its frames
  std::uint64_t incarnation_ = 0;
  Clock::time_point last_status_{};

  // Published.
  Counter fragments_sent_{0};
  Counter bytes_sent_{0};
  Counter blocks_sent_{0};
  Counter events_queued_{0};
  Counter frames_waiting_{0};
  Counter allocations_{0};
  Counter events_dropped_{0};
  Counter bu_downs_{0};
  Counter lost_connections_{0};
  Counter stale_frames_{0};
  Counter malformed_{0};
  Counter pool_waits_{0};
  Counter would_blocks_{0};
  Counter send_errors_{0};
  Counter status_reports_{0};
  Counter status_retries_{0};
  std::atomic<Clock::rep> last_status_sent_{0};  // steady clock ticks of the last status report that went out
  Counter run_published_{0};
  apps::RateMeter rate_;
};

}  // namespace daqx::evb
