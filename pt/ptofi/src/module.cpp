// The ptofi module: registers the libfabric transport for endpoint protocol "ofi".
#include "daqx/pt/transport_module.hpp"
#include "ofi_transport.hpp"

DAQX_MODULE {
  static const daqx::ModuleDescriptor descriptor = daqx::pt::transport_module<daqx::ptofi::OfiTransport>(
      "ptofi", "ofi",
      "libfabric reliable connected endpoints (FI_EP_MSG): tcp, verbs, ... providers; credit-paced sends straight "
      "from pool blocks into pre-posted receive buffers",
      daqx::ptofi::parameter_specs(), daqx::ptofi::capabilities);
  return &descriptor;
}
