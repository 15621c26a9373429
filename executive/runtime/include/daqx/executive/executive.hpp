// The executive as a library: what daqx-executive's main() runs, and what a custom main can embed.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "daqx/api/module.hpp"
#include "daqx/api/transport.hpp"
#include "daqx/executive/control.hpp"
#include "daqx/executive/partition.hpp"
#include "daqx/executive/resource_plan.hpp"

namespace daqx {

namespace detail {
class ExecutiveCore;
}

// Modules loaded for a listing, each with the file it came from. Modules stay loaded for the life of the process,
// so the descriptors stay valid.
struct ModuleListing {
  struct Module {
    std::string path;
    const ModuleDescriptor* descriptor = nullptr;
  };
  std::vector<Module> modules;
  std::vector<ParamSpec> application_params;  // what the executive adds to every application class
};

class Executive {
 public:
  // Loads the context's modules, checks the partition against them, makes pools, transports (listening)
  // and applications (Halted). Throws config::ConfigError (every mistake as "file:line: reason") or
  // std::runtime_error.
  Executive(config::Partition partition, const std::string& context_url, std::size_t inbox_capacity = 4096);
  ~Executive();
  Executive(const Executive&) = delete;
  Executive& operator=(const Executive&) = delete;

  ControlModel& control() noexcept;
  // Stops enabled applications, halts all, stops transports and threads. Idempotent.
  void shutdown();

  // What `daqx-executive --list-params MODULE...` lists (formatted by daqx/control/module_listing.hpp): the
  // modules, loaded. Throws std::runtime_error if a module cannot load. With no module named: every module of the
  // module path (the first of each file name), and the reason for each file there that does not load goes to
  // `not_loaded` instead.
  static ModuleListing list_modules(const std::vector<std::string>& modules,
                                    std::vector<std::string>* not_loaded = nullptr);
  // What `daqx-executive --check` does: loads the modules of the context (every context when `context_url` is
  // empty) and checks the partition against them (classes, protocols, parameters, selectors), without opening
  // a port or making anything. Returns every mistake as "file:line: reason"; empty when all is well.
  static std::vector<std::string> check(const config::Partition& partition, const std::string& context_url);
  // The partition's connection plan as --check prints it: one line for the whole, then one per context (or the
  // one named): connections out and in, and the file descriptors they need.
  static std::vector<std::string> connection_plan(const config::Partition& partition, const std::string& context_url);
  // The plan before start (resource_plan.hpp): what every context will use, from the partition's declared
  // parameters and the modules of every context that load here (what a module that does not load would add is
  // named in ContextNeeds::not_counted).
  static std::vector<ContextNeeds> plan_resources(const config::Partition& partition);
  // What `daqx-executive --capabilities MODULE [NAME=VALUE ...]` prints (as JSON, daqx/control/module_listing.hpp):
  // each transport of the module with the capabilities it would offer with those parameters. Throws
  // std::runtime_error for a module that cannot load or a parameter it refuses.
  static std::vector<std::pair<std::string, TransportCapabilities>> transport_capabilities(
      const std::string& module, const std::vector<std::string>& assignments);

 private:
  std::unique_ptr<detail::ExecutiveCore> core_;
};

}  // namespace daqx
