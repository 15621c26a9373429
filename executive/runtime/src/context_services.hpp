// What the parts an executive hosts (application hosts, transport bindings) use of it: the partition, the
// registries of threads and pools, the route table and the facts a receive thread reads without a lock. The core
// that owns them all stays out of sight of its parts, and its parts out of its header's reach.
#pragma once

#include <atomic>
#include <cstdint>

#include "daqx/executive/partition.hpp"
#include "pool_registry.hpp"
#include "route_table.hpp"
#include "threads.hpp"

namespace daqx::detail {

// Written by the core and read by transports' receive threads (acquire); counted by them (relaxed).
struct DeliveryState {
  // Every hosted application dispatches frames from transports inline (false until they are made).
  std::atomic<bool> all_inline{false};
  // An application is Enabled.
  std::atomic<bool> applications_enabled{false};
  std::atomic<std::uint64_t> bad_frames{0};              // refused on receive (unknown target)
  std::atomic<std::uint64_t> frames_from_transports{0};  // handed to an application
};

struct ContextServices {
  const config::Partition& partition;
  const config::ContextConfig& context;  // this executive's context in `partition`
  ThreadRegistry& threads;
  PoolRegistry& pools;
  RouteTable& routes;
  DeliveryState& delivery;
};

}  // namespace daqx::detail
