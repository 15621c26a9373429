// Named threads pinned by the partition's policy, and the registry that lists them with their real affinity.
#pragma once

#include <functional>
#include <list>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "daqx/executive/control.hpp"
#include "daqx/executive/partition.hpp"

namespace daqx::detail {

// The policy rules that apply to this context, matched by glob against hierarchical names.
class Policy {
 public:
  Policy() = default;
  Policy(const config::Partition& partition, const std::string& context_url);
  // Cores for a thread name (empty: leave it to the scheduler).
  std::vector<int> cores_for_thread(const std::string& name) const;
  // Allocator spec for a pool name ("heap" when no rule matches).
  // The allocator of the first pool rule matching name; empty when none matches.
  std::string allocator_for_pool(const std::string& name) const;

 private:
  std::vector<config::PolicyRule> rules_;
};

// The policy rules of the context that this machine cannot honour (CPUs this process may not run on, NUMA nodes
// it does not have), each as "file:line: reason"; empty when it can honour all.
std::vector<std::string> check_policy_on_this_machine(const config::Partition& partition,
                                                      const std::string& context_url);

class ThreadRegistry {
 public:
  explicit ThreadRegistry(const Policy& policy) : policy_(policy) {}
  // Starts body on a thread that names itself (the kernel's 15-character comm gets the name's tail),
  // pins itself as the policy says, and is listed until it returns.
  std::jthread start(const std::string& name, std::function<void(std::stop_token)> body);
  std::vector<ThreadStatus> list() const;

 private:
  struct Entry {
    std::string name;
    int kernel_tid = 0;
    std::vector<int> cores_wanted;
  };
  const Policy& policy_;
  mutable std::mutex mutex_;
  std::list<Entry> entries_;
};

// The CPUs a kernel thread may run on, read back from the kernel.
std::vector<int> thread_affinity(int kernel_tid);

}  // namespace daqx::detail
