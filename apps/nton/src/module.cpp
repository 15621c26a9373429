// The nton module's entry point: the three test application classes and their parameters.
#include <memory>

#include "daqx/api/module.hpp"
#include "ping_pong.hpp"
#include "receiver.hpp"
#include "sender.hpp"

DAQX_MODULE {
  using daqx::Application;
  using daqx::ApplicationContext;
  static const daqx::ModuleDescriptor descriptor{
      .abi_version = daqx::kModuleAbiVersion,
      .name = "nton",
      .applications =
          {
              {.name = "nton::Sender",
               .help = "sends frames round-robin to its receivers with a window of unacknowledged frames each",
               .params = daqx::nton::Sender::parameters(),
               .create = [](ApplicationContext& context) -> std::unique_ptr<Application> {
                 return std::make_unique<daqx::nton::Sender>(context);
               },
               .handlers_may_run_inline = true,
               .workers = 1},  // the sender
              {.name = "nton::Receiver",
               .help = "receives, verifies (pattern, order per sender) and acknowledges the frames of Senders",
               .params = daqx::nton::Receiver::parameters(),
               .create = [](ApplicationContext& context) -> std::unique_ptr<Application> {
                 return std::make_unique<daqx::nton::Receiver>(context);
               },
               .handlers_may_run_inline = true,
               .workers = 1},  // the hold timer
              {.name = "nton::PingPong",
               .help = "round-trip latency: the ping sends a frame, the pong echoes it",
               .params = daqx::nton::PingPong::parameters(),
               .create = [](ApplicationContext& context) -> std::unique_ptr<Application> {
                 return std::make_unique<daqx::nton::PingPong>(context);
               },
               .handlers_may_run_inline = true},
          },
      .transports = {},
  };
  return &descriptor;
}
