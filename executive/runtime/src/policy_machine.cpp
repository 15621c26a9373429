// Whether this machine can honour a context's policy: the CPUs its thread rules pin to and the NUMA nodes its pool
// rules bind to must exist here, which only the host that runs the context can tell.
#include "threads.hpp"

#include <sched.h>

#include <string_view>

#include "daqx/mempool/allocator.hpp"
#include "daqx/services/number_text.hpp"

namespace daqx::detail {
namespace {

// "0-3,6": the CPUs in a set, as an operator writes them in a partition.
std::string cpu_ranges(const cpu_set_t& set) {
  std::string text;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (!CPU_ISSET(cpu, &set)) continue;
    int last = cpu;
    while (last + 1 < CPU_SETSIZE && CPU_ISSET(last + 1, &set)) ++last;
    if (!text.empty()) text.append(",");
    text.append(std::to_string(cpu));
    if (last > cpu) text.append("-").append(std::to_string(last));
    cpu = last;
  }
  return text;
}

// The node of "numa:<node>" or "shm:numa:<node>"; -1 for allocators bound to no node.
long numa_node_of(std::string_view allocator) {
  const std::size_t at = allocator.find("numa:");
  if (at == std::string_view::npos) return -1;
  return numbers::parse<long>(allocator.substr(at + 5), 0).value.value_or(-1);
}

}  // namespace

std::vector<std::string> check_policy_on_this_machine(const config::Partition& partition,
                                                      const std::string& context_url) {
  std::vector<std::string> problems;
  // The CPUs this process may run on (its cpuset, taskset), not all the machine has: pinning outside them fails.
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  const bool affinity_known = sched_getaffinity(0, sizeof allowed, &allowed) == 0;
  const int max_node = mem::max_numa_node();
  for (const config::PolicyRule& rule : partition.policy) {
    if (!rule.context.empty() && rule.context != context_url) continue;
    if (rule.kind == config::PolicyRule::Kind::thread && affinity_known) {
      for (int cpu : rule.cores) {
        if (CPU_ISSET(cpu, &allowed)) continue;
        problems.push_back(rule.where.text() + ": the thread rule for '" + rule.pattern + "' pins to CPU " +
                           std::to_string(cpu) + ", which this executive may not run on (its CPUs: " +
                           cpu_ranges(allowed) + ")");
        break;  // one message per rule: a range past the machine would otherwise repeat it for every CPU
      }
    } else if (rule.kind == config::PolicyRule::Kind::pool) {
      const long node = numa_node_of(rule.allocator);
      if (node <= max_node) continue;
      std::string nodes = "0";
      if (max_node > 0) nodes.append("-").append(std::to_string(max_node));
      problems.push_back(rule.where.text() + ": the pool rule for '" + rule.pattern + "' binds to NUMA node " +
                         std::to_string(node) + ", which this machine does not have (its nodes: " + nodes + ")");
    }
  }
  return problems;
}

}  // namespace daqx::detail
