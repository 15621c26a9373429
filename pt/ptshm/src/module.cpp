// The ptshm module: registers the ShmTransport for endpoint protocol "shm".
#include "daqx/pt/transport_module.hpp"
#include "shm_transport.hpp"

namespace daqx::ptshm {
DAQX_MODULE { return pt::transport_module<ShmTransport>("ptshm", "shm", kHelp, parameter_specs, describe); }
}  // namespace daqx::ptshm
