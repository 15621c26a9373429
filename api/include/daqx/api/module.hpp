// The one entry point a daqx module (.so) exports: a description of the classes it provides.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "daqx/api/application.hpp"
#include "daqx/api/parameters.hpp"
#include "daqx/api/transport.hpp"

namespace daqx {

// Bumped whenever a header of the plugin API changes incompatibly; a module built against another
// version is refused at load with both numbers.
inline constexpr std::uint32_t kModuleAbiVersion = 5;

struct ApplicationClass {
  std::string name;  // e.g. "nton::Sender"
  std::string help;  // one line
  std::vector<ParamSpec> params;
  std::function<std::unique_ptr<Application>(ApplicationContext&)> create;
  // The class's handlers keep the inline contract (application.hpp): with the executive parameter dispatch=auto
  // (its default) they then run on the transport's receive thread, not behind a queue.
  bool handlers_may_run_inline = false;
  // Threads it may start besides its dispatch thread (start_worker: a ticker, an output writer), at most; for the
  // plan before start.
  std::size_t workers = 0;
};

struct TransportClass {
  std::string protocol;  // endpoint protocol it serves: "tcp", "ofi", "ibv"
  std::string help;
  std::vector<ParamSpec> params;
  std::function<std::unique_ptr<Transport>(TransportHost&)> create;
  // What a transport made with these parameters would offer, without opening anything.
  std::function<TransportCapabilities(const ParamSet&)> capabilities;
};

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
