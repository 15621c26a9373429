// The one entry point a daqx module (.so) exports: a description of the classes it provides.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "daqx/executive/application.hpp"
#include "daqx/executive/parameters.hpp"
#include "daqx/executive/transport.hpp"

namespace daqx {

// Bumped whenever a public executive header changes incompatibly; a module built against another
// version is refused at load with both numbers.
inline constexpr std::uint32_t kModuleAbiVersion = 1;

struct ApplicationClass {
  std::string name;  // e.g. "nton::Sender"
  std::string help;  // one line
  std::vector<ParamSpec> params;
  std::function<std::unique_ptr<Application>(ApplicationContext&)> create;
};

struct TransportClass {
  std::string protocol;  // endpoint protocol it serves: "tcp", "ofi", "ibv"
  std::string help;
  std::vector<ParamSpec> params;
  std::function<std::unique_ptr<Transport>(TransportHost&)> create;
};

// Parameters the executive adds to every application class, whatever its module declares.
std::vector<ParamSpec> executive_application_params();

struct ModuleDescriptor {
  std::uint32_t abi_version = kModuleAbiVersion;
  std::string name;  // e.g. "nton"
  std::vector<ApplicationClass> applications;
  std::vector<TransportClass> transports;
};

}  // namespace daqx

// Each module defines this once: `DAQX_MODULE { static const daqx::ModuleDescriptor d = {...}; return &d; }`
#define DAQX_MODULE_ENTRY_NAME "daqx_module"
#define DAQX_MODULE extern "C" __attribute__((visibility("default"))) const daqx::ModuleDescriptor* daqx_module()
