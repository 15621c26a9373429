// evb::ru::RU, a readout unit: it reads each event's super-fragment from its data source (readout/data_source.hpp; in
// test mode, the only one today, SyntheticSource: sizes fixed or log-normal, a pattern and a CRC per source
// fragment) and sends it to the BU the EvM names, in blocks
// filled straight from its pool. It reports to the EvM every heartbeatInterval and fails the run's part it
// plays if the EvM falls silent.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "daqx/apps/rate_meter.hpp"
#include "daqx/evb/protocol.hpp"
#include "daqx/api/application.hpp"
#include "common/dispatch.hpp"
#include "common/outbox.hpp"
#include "ru/bu_proxy.hpp"
#include "ru/evm_proxy.hpp"
#include "ru/ru_configuration.hpp"
#include "readout/synthetic_source.hpp"

namespace daqx::evb::ru {

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
  void end_run();

  RuConfiguration config_;
  readout::SyntheticSource source_;  // the data source; declared before the proxy that reads it
  Outbox outbox_;  // to the EvM and the BUs alike
  BuProxy builders_;
  EvmProxy evm_;
  Ticker ticker_;
  apps::RateMeter rate_;
};

}  // namespace daqx::evb::ru
