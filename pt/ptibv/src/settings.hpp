// ptibv's parameters: what an endpoint's <Properties> (or the module's defaults) may say, checked at
// configure time so that a mistake is named before anything connects.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "daqx/api/parameters.hpp"
#include "daqx/api/transport.hpp"
#include "daqx/pt/connection_settings.hpp"

namespace daqx::ptibv {

inline constexpr const char* kHelp =
    "InfiniBand verbs RC queue pairs (InfiniBand, RoCE) set up with rdma_cm by IP and port; credit-paced sends "
    "straight from registered pool blocks into pre-posted receive buffers";

// ptibv's own settings; the shared ones (connectAt, waitMode, queues, buffers, depths, backoff) are
// pt::ConnectionSettings and pt::MessageSettings.
struct Settings {
  std::string device;            // empty: the device of the endpoint's address; else a name (mlx5_0) or an IP
  std::uint8_t port = 0;         // 0: the port rdma_cm finds for the address; else it must be that one
  int gid_index = -1;            // -1: rdma_cm's choice for the address; else this GID table entry
  std::uint32_t mtu = 0;         // 0: the path's MTU; else 256, 512, 1024, 2048 or 4096 (no more than the path's)
  enum class Srq { automatic, never } srq = Srq::automatic;
  std::size_t inline_threshold = 256;  // frames up to this size go inline (capped by the device); 0: never
  enum class Numa { policy, device, node } numa = Numa::policy;
  int numa_node = -1;            // with Numa::node
  std::chrono::milliseconds resolve_timeout{2000};

  // Throws std::invalid_argument naming the parameter and what it expected.
  static Settings from(const ParamSet& params);
};

// The shared connection and message parameters and ptibv's own.
std::vector<ParamSpec> parameter_specs();
// What a ptibv transport with these parameters offers (before a device is open).
TransportCapabilities describe(const ParamSet& params);

// ibv_mtu enum value for a byte count (256..4096), 0 when the count is not a verbs MTU.
int mtu_enum(std::uint32_t bytes) noexcept;
std::uint32_t mtu_bytes(int mtu_enum_value) noexcept;

}  // namespace daqx::ptibv
