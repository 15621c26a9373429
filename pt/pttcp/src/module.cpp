// The pttcp module: registers the TcpTransport for endpoint protocol "tcp".
#include "daqx/pt/transport_module.hpp"
#include "tcp_transport.hpp"

namespace daqx::pttcp {
DAQX_MODULE { return pt::transport_module<TcpTransport>("pttcp", "tcp", kHelp, parameter_specs, describe); }
}  // namespace daqx::pttcp
