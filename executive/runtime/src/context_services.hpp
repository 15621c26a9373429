// What the parts an executive hosts (application hosts, transport bindings) use of it: the partition, the
// registries of threads and pools, the route table and the facts a receive thread reads without a lock. The core
// that owns them all stays out of sight of its parts, and its parts out of its header's reach.
#pragma once

#include <atomic>
#include <cstdint>

#include "daqx/api/counter_set.hpp"
#include "daqx/executive/partition.hpp"
#include "pool_registry.hpp"
#include "route_table.hpp"
#include "threads.hpp"

namespace daqx::detail {

// What transports' receive threads count, on the executive's own metrics.
struct DeliveryCounters : CounterSet {
  Counter frames_from_transports{*this, "frames_from_transports",
                                 "frames received from peer transports and queued for an application"};
  Counter bad_frames{*this, "bad_frames",
                     "frames refused on receive (bad header, unknown target); each closed its connection"};
};

// Written by the core and read by transports' receive threads (acquire); counted by them.
struct DeliveryState {
  // Every hosted application dispatches frames from transports inline (false until they are made).
  std::atomic<bool> all_inline{false};
  // An application is Enabled.
  std::atomic<bool> applications_enabled{false};
  DeliveryCounters counters;
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
