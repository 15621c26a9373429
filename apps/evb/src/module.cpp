// The evb module's entry point: the event builder's applications and their parameters.
#include <memory>

#include "bu/bu.hpp"
#include "consumer/consumer_app.hpp"
#include "daqx/api/module.hpp"
#include "evm/evm.hpp"
#include "monitor/monitor.hpp"
#include "ru/ru.hpp"

namespace {
template <typename T>
std::unique_ptr<daqx::Application> make(daqx::ApplicationContext& context) {
  return std::make_unique<T>(context);
}
}  // namespace

DAQX_MODULE {
  static const daqx::ModuleDescriptor descriptor{
      .abi_version = daqx::kModuleAbiVersion,
      .name = "evb",
      .applications =
          {
              {.name = "evb::EvM",
               .help = "event manager: numbers events, assigns batches to BU slots, tells RUs, sends the trigger fragment",
               .params = daqx::evb::evm::EvM::parameters(),
               .create = make<daqx::evb::evm::EvM>,
               .handlers_may_run_inline = true,
               .workers = 1},  // the ticker
              {.name = "evb::RU",
               .help = "readout unit: sends its super-fragment of every event to the BU the EvM names",
               .params = daqx::evb::ru::RU::parameters(),
               .create = make<daqx::evb::ru::RU>,
               .handlers_may_run_inline = true,
               .workers = 1},  // the ticker
              {.name = "evb::BU",
               .help = "builder unit: asks for events, assembles and checks them without copies, outputs them",
               .params = daqx::evb::bu::BU::parameters(),
               .create = make<daqx::evb::bu::BU>,
               .handlers_may_run_inline = true,
               .workers = 2},  // the ticker, the file output
              {.name = "evb::Consumer",
               .help = "downstream of a BU with output consumer: checks built events (optionally slowly) and lets them go",
               .params = daqx::evb::consumer::Consumer::parameters(),
               .create = make<daqx::evb::consumer::Consumer>,
               .workers = 1},  // its consumer
              {.name = "evb::Monitor",
               .help = "subscriber of a BU's stream of built events: counts and verifies them, with the policy it is given",
               .params = daqx::evb::monitor::Monitor::parameters(),
               .create = make<daqx::evb::monitor::Monitor>,
               .handlers_may_run_inline = true,  // counting (and verifying) a record neither blocks nor waits
               .workers = 1},  // its subscriber's ticker (subscribing again, acknowledging when idle)
          },
      .transports = {},
  };
  return &descriptor;
}
