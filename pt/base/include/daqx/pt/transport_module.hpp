// The description a transport module returns from its entry point, made the same way for every transport:
// the module's name, the endpoint protocol it serves, a line of help, its parameters and its capabilities for
// a set of them.
//
//   DAQX_MODULE { return daqx::pt::transport_module<MyTransport>("ptmine", "mine", kHelp, parameter_specs, describe); }
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "daqx/api/module.hpp"

namespace daqx::pt {

template <typename TransportType>
const ModuleDescriptor* transport_module(const char* module, const char* protocol, const char* help,
                                         std::vector<ParamSpec> (*parameter_specs)(),
                                         TransportCapabilities (*describe)(const ParamSet&)) {
  static const ModuleDescriptor descriptor = [&] {
    ModuleDescriptor d;
    d.name = module;
    d.transports.push_back(TransportClass{
        protocol, help, parameter_specs(),
        [](TransportHost& host) -> std::unique_ptr<Transport> { return std::make_unique<TransportType>(host); },
        describe});
    return d;
  }();
  return &descriptor;
}

}  // namespace daqx::pt
