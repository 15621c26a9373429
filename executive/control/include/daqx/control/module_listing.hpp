// What `daqx-executive --list-params` and `--capabilities` print, formatted from what the runtime loaded
// (daqx::Executive::list_modules, daqx::Executive::transport_capabilities).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "daqx/api/transport.hpp"
#include "daqx/executive/executive.hpp"

namespace daqx {

// Every class and transport of the modules with each parameter's name, type, default, unit, bounds, allowed words
// and help, then the parameters the executive adds to every application: a table for people.
std::string module_listing_text(const ModuleListing& listing);
// The same as JSON for tools: {"modules": [{"name", "path", "applications": [{"class", "help", "parameters": [...]}],
//   "transports": [{"protocol", "help", "parameters": [...], "capabilities": {...}}]}],
//  "applicationParameters": [...]}; each parameter: name, type, default, unit, min, max (numbers in the
// parameter's own type, null when unbounded), allowed (words, empty when any text), help. A transport's
// capabilities have the shape of transport_capabilities_json's.
std::string module_listing_json(const ModuleListing& listing);
// [{"protocol": ..., "capabilities": {...}}, ...]: the control API's shape for capabilities.
std::string transport_capabilities_json(const std::vector<std::pair<std::string, TransportCapabilities>>& transports);

}  // namespace daqx
