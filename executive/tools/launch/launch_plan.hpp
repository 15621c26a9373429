// The plan before start as daqx-launch makes it: every context's needs (Executive::plan_resources), the limits
// of every host asked through the engine (a bounded number of hosts at a time), and what does not fit them.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "daqx/executive/resource_plan.hpp"
#include "engine.hpp"

namespace daqx::launch {

struct LaunchPlan {
  std::vector<ContextNeeds> needs;               // in partition order
  std::map<std::string, HostLimits> limits;      // by the host of the context URLs
  std::vector<std::string> unknown_limits;       // "host X (ssh X): its limits cannot be asked (...)", per host
  std::vector<PlanShortfall> shortfalls;         // refusals and warnings, against the limits known

  // Nothing refused. Hosts whose limits are not known are not refused here: starting them says why.
  bool fits() const;
  // The table, each host's limits, the hosts not asked, and what does not fit, for --plan.
  std::vector<std::string> describe() const;
};

// Hosts asked at once, at most: each question is an ssh session or a Slurm step.
inline constexpr std::size_t kHostsAskedAtOnce = 16;

LaunchPlan make_launch_plan(const config::Partition& partition, Engine& engine, const std::vector<ContextLaunch>& contexts);

}  // namespace daqx::launch
