// The ptibv module: registers the IbvTransport for endpoint protocol "ibv".
#include "daqx/pt/transport_module.hpp"
#include "ibv_transport.hpp"

namespace daqx::ptibv {
DAQX_MODULE { return pt::transport_module<IbvTransport>("ptibv", "ibv", kHelp, parameter_specs, describe); }
}  // namespace daqx::ptibv
