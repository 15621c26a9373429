// The pttcp module: registers the TCP transport for endpoint protocol "tcp".
#include "daqx/pt/transport_module.hpp"
#include "tcp_transport.hpp"

DAQX_MODULE {
  static const daqx::ModuleDescriptor descriptor = daqx::pt::transport_module<daqx::pttcp::TcpTransport>(
      "pttcp", "tcp", "TCP over epoll: low-latency or coalescing throughput mode, zero-copy gather writes",
      daqx::pttcp::parameter_specs(), daqx::pttcp::capabilities);
  return &descriptor;
}
