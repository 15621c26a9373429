// ptshm's parameters and what a ptshm transport offers: the shared connection parameters (pt/base) and its
// own, checked at configure time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "daqx/api/parameters.hpp"
#include "daqx/api/transport.hpp"

namespace daqx::ptshm {

inline constexpr const char* kHelp =
    "shared memory between contexts of one host: frames cross as references into memfd pools through lock-free rings, "
    "zero copy";

struct Settings {
  std::uint32_t ring_entries = 4096;        // block references in flight per connection (each direction's ring)
  std::size_t receive_descriptors = 65536;  // peer blocks this context's applications can hold at once
  std::size_t copy_pool_bytes = std::size_t{64} << 20;  // the pool frames not in shared memory are copied into
  std::size_t pass_on_blocks = 4096;  // peers' blocks one connection holds by reference at once (passed on)

  static Settings from(const ParamSet& params);
};

std::vector<ParamSpec> parameter_specs();
TransportCapabilities describe(const ParamSet& params);
// The shared pool ("copy") that frames from pools not in shared memory are copied into.
mem::PoolConfig copy_pool_config(const Settings& settings);

}  // namespace daqx::ptshm
