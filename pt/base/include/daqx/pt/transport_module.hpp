// The description a transport module returns from its entry point (DAQX_MODULE), made the same way for
// every transport: its name, the endpoint protocol it serves, its parameters and capabilities, and how to
// make one.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "daqx/api/module.hpp"

namespace daqx::pt {

template <typename TransportType>
ModuleDescriptor transport_module(std::string module, std::string protocol, std::string help, std::vector<ParamSpec> params,
                                  TransportCapabilities (*capabilities)(const ParamSet&)) {
  ModuleDescriptor descriptor;
  descriptor.name = std::move(module);
  descriptor.transports.push_back(TransportClass{
      std::move(protocol), std::move(help), std::move(params),
      [](TransportHost& host) -> std::unique_ptr<Transport> { return std::make_unique<TransportType>(host); },
      capabilities});
  return descriptor;
}

}  // namespace daqx::pt
