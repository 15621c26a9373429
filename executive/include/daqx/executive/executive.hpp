// The executive as a library: what daqx-executive's main() runs, and what a custom main can embed.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "daqx/executive/control.hpp"
#include "daqx/executive/partition.hpp"

namespace daqx {

namespace detail {
class ExecutiveCore;
}

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

  // The table printed by `daqx-executive --list-params MODULE`: every class and transport of the module
  // with each parameter's name, type, default, unit and help. Throws std::runtime_error if it cannot load.
  static std::string list_params(const std::string& module);
  // What `daqx-executive --capabilities MODULE [NAME=VALUE ...]` prints: each transport of the module with the
  // capabilities it would offer with those parameters, as JSON. Throws std::runtime_error for a module that
  // cannot load or a parameter it refuses.
  static std::string transport_capabilities(const std::string& module, const std::vector<std::string>& assignments);

 private:
  std::unique_ptr<detail::ExecutiveCore> core_;
};

}  // namespace daqx
