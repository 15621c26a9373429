// The estimate behind the plan before start: each context's needs from the connection plan, the declared
// parameters of its transports (their capabilities) and applications, and the partition's pool policy.
#pragma once

#include <vector>

#include "connection_plan.hpp"
#include "daqx/executive/resource_plan.hpp"
#include "module_loader.hpp"

namespace daqx::detail {

// `modules` knows the classes and transports of every context that could be loaded here.
std::vector<ContextNeeds> estimate_needs(const config::Partition& partition, const ConnectionPlan& plan,
                                         const ModuleRegistry& modules);

}  // namespace daqx::detail
