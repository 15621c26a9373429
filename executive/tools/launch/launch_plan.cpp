// Making the launcher's plan before start: needs here, limits from each host, the fit.
#include "launch_plan.hpp"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <thread>

#include "daqx/executive/executive.hpp"

namespace daqx::launch {

bool LaunchPlan::fits() const {
  return std::none_of(shortfalls.begin(), shortfalls.end(), [](const PlanShortfall& s) { return s.refused; });
}

std::vector<std::string> LaunchPlan::describe() const {
  std::vector<std::string> lines = describe_needs(needs);
  for (const auto& [host, host_limits] : limits) lines.push_back(describe_limits(host_limits, host));
  for (const std::string& unknown : unknown_limits) lines.push_back(unknown + ": not checked");
  for (const PlanShortfall& shortfall : shortfalls)
    lines.push_back((shortfall.refused ? "does not fit: " : "warning: ") + shortfall.text());
  lines.push_back(fits() ? "the partition fits its hosts" : "the partition does not fit its hosts");
  return lines;
}

LaunchPlan make_launch_plan(const config::Partition& partition, Engine& engine, const std::vector<ContextLaunch>& contexts) {
  LaunchPlan plan;
  plan.needs = Executive::plan_resources(partition);
  // One question per host (its first context speaks for it: same executive, same user, same limits).
  std::vector<const ContextLaunch*> asked;
  std::map<std::string, bool> seen;
  for (const ContextLaunch& context : contexts)
    if (!seen[context.context->host]) {
      seen[context.context->host] = true;
      asked.push_back(&context);
    }
  std::mutex mutex;
  std::atomic<std::size_t> next{0};
  const auto ask = [&] {
    for (std::size_t i; (i = next.fetch_add(1)) < asked.size();) {
      const ContextLaunch& context = *asked[i];
      try {
        HostLimits limits = engine.host_limits(context);
        std::lock_guard lock(mutex);
        plan.limits.emplace(context.context->host, std::move(limits));
      } catch (const LaunchError& error) {
        std::lock_guard lock(mutex);
        plan.unknown_limits.push_back(error.what());
      }
    }
  };
  std::vector<std::thread> askers;
  const std::size_t threads = std::min(kHostsAskedAtOnce, asked.size());
  for (std::size_t t = 1; t < threads; ++t) askers.emplace_back(ask);
  ask();
  for (std::thread& asker : askers) asker.join();
  std::sort(plan.unknown_limits.begin(), plan.unknown_limits.end());
  plan.shortfalls = check_fit(plan.needs, [&](const std::string& host) -> const HostLimits* {
    const auto found = plan.limits.find(host);
    return found == plan.limits.end() ? nullptr : &found->second;
  });
  return plan;
}

}  // namespace daqx::launch
