// The pttcp module: registers the TCP transport for endpoint protocol "tcp".
#include "daqx/executive/module.hpp"
#include "tcp_transport.hpp"

DAQX_MODULE {
  static const daqx::ModuleDescriptor descriptor{
      daqx::kModuleAbiVersion,
      "pttcp",
      {},
      {daqx::TransportClass{"tcp", "TCP over epoll: low-latency or coalescing throughput mode, zero-copy gather writes",
                            daqx::pttcp::parameter_specs(),
                            [](daqx::TransportHost& host) { return std::make_unique<daqx::pttcp::TcpTransport>(host); }}}};
  return &descriptor;
}
