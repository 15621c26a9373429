// ptofi's parameters and what a ptofi transport offers: the shared connection and message parameters
// (pt/base) and its own, checked at configure time.
#pragma once

#include <string>
#include <vector>

#include "daqx/api/parameters.hpp"
#include "daqx/api/transport.hpp"

namespace daqx::ptofi {

inline constexpr const char* kHelp =
    "libfabric reliable connected endpoints (FI_EP_MSG): tcp, verbs, ... providers; credit-paced sends straight "
    "from pool blocks into pre-posted receive buffers";

struct Settings {
  std::string provider = "tcp";
  enum class Registration { automatic, always, never } registration = Registration::automatic;
  enum class Srx { automatic, never } srx = Srx::automatic;

  static Settings from(const ParamSet& params);
};

// The shared connection and message parameters and ptofi's own.
std::vector<ParamSpec> parameter_specs();
// What a ptofi transport with these parameters offers; asks libfabric about the provider, opens nothing.
TransportCapabilities describe(const ParamSet& params);

}  // namespace daqx::ptofi
