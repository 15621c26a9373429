// ptibv's parameters: what an endpoint's <Properties> (or the module's defaults) may say, checked at
// configure time so that a mistake is named before anything connects.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "daqx/executive/frame.hpp"
#include "daqx/executive/parameters.hpp"

namespace daqx::ptibv {

struct Settings {
  std::string device;            // empty: the device of the endpoint's address; else a name (mlx5_0) or an IP
  std::uint8_t port = 0;         // 0: the port rdma_cm finds for the address; else it must be that one
  int gid_index = -1;            // -1: rdma_cm's choice for the address; else this GID table entry
  std::uint32_t mtu = 0;         // 0: the path's MTU; else 256, 512, 1024, 2048 or 4096 (no more than the path's)
  bool busy_poll = false;        // else completion channels waited on through epoll
  bool connect_at_start = true;  // else on the first post (or the connect command)
  std::size_t recv_buffer_size = 128 * 1024;
  std::size_t recv_depth = 64;   // receive buffers posted per incoming connection (its sender's credits)
  std::size_t recv_pool_bytes = std::size_t{256} << 20;
  enum class Srq { automatic, never } srq = Srq::automatic;
  std::size_t send_depth = 128;  // send work requests in flight per connection (capped by the device)
  std::size_t send_queue = 4096; // frames queued per connection before post() says would_block
  std::size_t inline_threshold = 256;  // frames up to this size go inline (capped by the device); 0: never
  enum class Numa { policy, device, node } numa = Numa::policy;
  int numa_node = -1;            // with Numa::node
  std::chrono::milliseconds reconnect_min{50};
  std::chrono::milliseconds reconnect_max{2000};
  std::chrono::milliseconds resolve_timeout{2000};
  std::uint32_t max_frame_size = kDefaultMaxFrameSize;

  // Throws std::invalid_argument naming the parameter and what it expected.
  static Settings from(const ParamSet& params, std::uint32_t max_frame_size);
};

std::vector<ParamSpec> parameter_specs();

// ibv_mtu enum value for a byte count (256..4096), 0 when the count is not a verbs MTU.
int mtu_enum(std::uint32_t bytes) noexcept;
std::uint32_t mtu_bytes(int mtu_enum_value) noexcept;

}  // namespace daqx::ptibv
