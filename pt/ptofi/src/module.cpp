// The ptofi module: registers the OfiTransport for endpoint protocol "ofi".
#include "daqx/pt/transport_module.hpp"
#include "ofi_transport.hpp"

namespace daqx::ptofi {
DAQX_MODULE { return pt::transport_module<OfiTransport>("ptofi", "ofi", kHelp, parameter_specs, describe); }
}  // namespace daqx::ptofi
