// What `daqx-executive --list-params` prints: every class and transport of the loaded modules with each
// parameter's declaration, as a table for people or as JSON for tools.
#pragma once

#include <string>

#include "module_loader.hpp"

namespace daqx::detail {

std::string param_listing_text(const ModuleRegistry& registry);
// {"modules": [{"name", "path", "applications": [{"class", "help", "parameters": [...]}],
//   "transports": [{"protocol", "help", "parameters": [...], "capabilities": {...}}]}],
//  "applicationParameters": [...]}; each parameter: name, type, default, unit, min, max (numbers in the
// parameter's own type, null when unbounded), allowed (words, empty when any text), help.
std::string param_listing_json(const ModuleRegistry& registry);

}  // namespace daqx::detail
