// The ptofi module: registers the libfabric transport for endpoint protocol "ofi".
#include "daqx/executive/module.hpp"
#include "ofi_transport.hpp"

DAQX_MODULE {
  static const daqx::ModuleDescriptor descriptor{
      daqx::kModuleAbiVersion,
      "ptofi",
      {},
      {daqx::TransportClass{"ofi",
                            "libfabric reliable connected endpoints (FI_EP_MSG): tcp, verbs, ... providers; credit-paced "
                            "sends straight from pool blocks into pre-posted receive buffers",
                            daqx::ptofi::parameter_specs(),
                            [](daqx::TransportHost& host) { return std::make_unique<daqx::ptofi::OfiTransport>(host); }}}};
  return &descriptor;
}
