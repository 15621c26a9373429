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
#include "dispatch.hpp"
#include "fragment_logic.hpp"
#include "fragment_sender.hpp"
#include "outbox.hpp"
#include "ru/evm_proxy.hpp"
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
  void tick();
  void schedule_pump();
  void pump();
  void end_run();

  RuConfiguration config_;
  Outbox outbox_;
  FragmentSender sender_;
  EvmProxy evm_;
  Ticker ticker_;

  // Dispatch thread only.
  bool running_ = false;
  bool pump_posted_ = false;

  // Published.
  Counter fragments_sent_{0};
  Counter bytes_sent_{0};
  Counter blocks_sent_{0};
  Counter events_queued_{0};
  Counter frames_waiting_{0};
  Counter pool_waits_{0};
  Counter would_blocks_{0};
  Counter send_errors_{0};
  apps::RateMeter rate_;
};

}  // namespace daqx::evb
