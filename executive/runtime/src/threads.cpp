// Policy matching, thread naming and pinning, and the thread list shown on status pages.
#include "threads.hpp"

#include <fnmatch.h>
#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include "daqx/services/log.hpp"

namespace daqx::detail {

Policy::Policy(const config::Partition& partition, const std::string& context_url) {
  for (const config::PolicyRule& rule : partition.policy)
    if (rule.context.empty() || rule.context == context_url) rules_.push_back(rule);
}

std::vector<int> Policy::cores_for_thread(const std::string& name) const {
  for (const config::PolicyRule& rule : rules_)
    if (rule.kind == config::PolicyRule::Kind::thread && fnmatch(rule.pattern.c_str(), name.c_str(), 0) == 0)
      return rule.cores;
  return {};
}

std::string Policy::allocator_for_pool(const std::string& name) const {
  for (const config::PolicyRule& rule : rules_)
    if (rule.kind == config::PolicyRule::Kind::pool && fnmatch(rule.pattern.c_str(), name.c_str(), 0) == 0)
      return rule.allocator;
  return {};
}

std::vector<int> thread_affinity(int kernel_tid) {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cores;
  if (sched_getaffinity(kernel_tid, sizeof set, &set) != 0) return cores;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
    if (CPU_ISSET(cpu, &set)) cores.push_back(cpu);
  return cores;
}

std::jthread ThreadRegistry::start(const std::string& name, std::function<void(std::stop_token)> body) {
  std::vector<int> cores = policy_.cores_for_thread(name);
  return std::jthread([this, name, cores, body = std::move(body)](std::stop_token stop) {
    std::string comm = name.size() > 15 ? name.substr(name.size() - 15) : name;
    pthread_setname_np(pthread_self(), comm.c_str());
    if (!cores.empty()) {
      cpu_set_t set;
      CPU_ZERO(&set);
      for (int cpu : cores) CPU_SET(cpu, &set);
      int error = pthread_setaffinity_np(pthread_self(), sizeof set, &set);
      if (error != 0)
        log(LogLevel::warning, "executive",
            "cannot pin thread '" + name + "' as the policy asks: error " + std::to_string(error));
    }
    std::list<Entry>::iterator entry;
    {
      std::lock_guard lock(mutex_);
      entry = entries_.insert(entries_.end(), Entry{name, static_cast<int>(gettid()), cores});
    }
    body(stop);
    std::lock_guard lock(mutex_);
    entries_.erase(entry);
  });
}

std::vector<ThreadStatus> ThreadRegistry::list() const {
  std::lock_guard lock(mutex_);
  std::vector<ThreadStatus> threads;
  for (const Entry& e : entries_)
    threads.push_back(ThreadStatus{e.name, e.kernel_tid, e.cores_wanted, thread_affinity(e.kernel_tid)});
  return threads;
}

}  // namespace daqx::detail
