// The ptibv module: registers the InfiniBand verbs transport for endpoint protocol "ibv".
#include "daqx/pt/transport_module.hpp"
#include "ibv_transport.hpp"

DAQX_MODULE {
  static const daqx::ModuleDescriptor descriptor = daqx::pt::transport_module<daqx::ptibv::IbvTransport>(
      "ptibv", "ibv",
      "InfiniBand verbs RC queue pairs (InfiniBand, RoCE) set up with rdma_cm by IP and port; credit-paced sends "
      "straight from registered pool blocks into pre-posted receive buffers",
      daqx::ptibv::parameter_specs(), daqx::ptibv::capabilities);
  return &descriptor;
}
