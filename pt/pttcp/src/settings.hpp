// pttcp's parameters and what a pttcp transport offers: the shared connection parameters (pt/base) and its
// own, checked at configure time so that a mistake is named before anything connects.
#pragma once

#include <chrono>
#include <cstddef>
#include <vector>

#include "daqx/api/parameters.hpp"
#include "daqx/api/transport.hpp"

namespace daqx::pttcp {

inline constexpr const char* kHelp = "TCP over epoll: low-latency or coalescing throughput mode, zero-copy gather writes";

// pttcp's own settings; the shared ones (connections, waiting, coalescing) are pt::ConnectionSettings.
struct Settings {
  int send_buffer = 0;                          // SO_SNDBUF, 0: kernel default
  int receive_buffer = 0;                       // SO_RCVBUF, 0: kernel default
  std::size_t copy_threshold = 16 * 1024;       // received frames up to this size are copied from the staging buffer
  std::size_t staging_bytes = 256 * 1024;       // per incoming connection
  // An incoming connection in the middle of a frame that brings no byte for this long is closed (and
  // counted): a peer that announces a frame and stops holds its partial frame's blocks no longer. 0: never.
  std::chrono::milliseconds stall_timeout{10000};

  static Settings from(const ParamSet& params);
};

// The shared connection parameters and pttcp's own.
std::vector<ParamSpec> parameter_specs();
TransportCapabilities describe(const ParamSet& params);
// The receive pool ("recv") a pttcp transport makes.
mem::PoolConfig receive_pool_config();

}  // namespace daqx::pttcp
