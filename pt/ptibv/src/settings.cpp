// ptibv's parameters and their checks.
#include "settings.hpp"

#include <algorithm>
#include <stdexcept>

namespace daqx::ptibv {
namespace {

std::invalid_argument bad(const std::string& name, const std::string& value, const std::string& expected) {
  return std::invalid_argument("parameter " + name + " is '" + value + "': expected " + expected);
}

}  // namespace

int mtu_enum(std::uint32_t bytes) noexcept {
  switch (bytes) {  // the values of enum ibv_mtu
    case 256: return 1;
    case 512: return 2;
    case 1024: return 3;
    case 2048: return 4;
    case 4096: return 5;
    default: return 0;
  }
}

std::uint32_t mtu_bytes(int mtu_enum_value) noexcept {
  return mtu_enum_value >= 1 && mtu_enum_value <= 5 ? 128u << mtu_enum_value : 0;
}

std::vector<ParamSpec> parameter_specs() {
  return {
      {"device", ParamType::string, "", "",
       "RDMA device by name (mlx5_0, rxe0) or by an IP address of its network interface; empty: the device the "
       "endpoint's address belongs to", {}, {}},
      {"port", ParamType::unsigned_integer, "0", "", "device port; 0: the one rdma_cm finds for the address", 0, 255},
      {"gidIndex", ParamType::integer, "-1", "",
       "GID table index for RoCE; -1: rdma_cm's choice for the address (RoCE v2 when the address is IPv4)", -1, 1023},
      {"mtu", ParamType::unsigned_integer, "0", "bytes",
       "path MTU: 256, 512, 1024, 2048 or 4096 (no more than the port's active MTU); 0: the route's", 0, 4096},
      {"waitMode", ParamType::string, "epoll", "",
       "epoll: completion threads sleep on completion channels; busy: they poll without sleeping", {}, {}},
      {"connectAt", ParamType::string, "start", "",
       "start: connect to every peer as soon as the executive has made its routes (before configure), retrying "
       "until it listens; first-use: on the first frame or the connect command", {}, {}},
      {"recvBufferSize", ParamType::unsigned_integer, "131072", "bytes",
       "size of each pre-posted receive buffer; larger frames arrive as chains of such buffers", 4096, 64.0 * 1024 * 1024},
      {"recvDepth", ParamType::unsigned_integer, "64", "buffers",
       "receive buffers kept posted per incoming connection (its sender's credits)", 2, 16384},
      {"recvPoolSize", ParamType::unsigned_integer, "268435456", "bytes",
       "the most memory the receive pool may grow to", 1 << 20, 64.0 * 1024 * 1024 * 1024},
      {"srq", ParamType::string, "auto", "",
       "auto: receive buffers go to one shared receive queue when the device has them; never: per connection", {}, {}},
      {"sendDepth", ParamType::unsigned_integer, "128", "messages",
       "send work requests in flight per connection (capped by the device)", 1, 65536},
      {"sendQueue", ParamType::unsigned_integer, "4096", "frames",
       "frames queued per connection before post() says would-block", 16, 1 << 20},
      {"inlineThreshold", ParamType::unsigned_integer, "256", "bytes",
       "frames up to this size are copied into the work request (IBV_SEND_INLINE; capped by the device); 0: never", 0,
       4096},
      {"numaNode", ParamType::string, "policy", "",
       "where ptibv's own pools live: policy (the partition's pool rules), device (the device's NUMA node), or "
       "a node number", {}, {}},
      {"reconnectMin", ParamType::unsigned_integer, "50", "ms", "first delay before reconnecting to a peer", 1, 60000},
      {"reconnectMax", ParamType::unsigned_integer, "2000", "ms", "longest delay between reconnection attempts", 1, 600000},
      {"resolveTimeout", ParamType::unsigned_integer, "2000", "ms", "rdma_cm address and route resolution timeout", 10,
       60000},
  };
}

Settings Settings::from(const ParamSet& params, std::uint32_t max_frame_size) {
  Settings s;
  s.device = params.string("device");
  s.port = static_cast<std::uint8_t>(params.unsigned_integer("port"));
  s.gid_index = static_cast<int>(params.integer("gidIndex"));
  s.mtu = static_cast<std::uint32_t>(params.unsigned_integer("mtu"));
  if (s.mtu != 0 && mtu_enum(s.mtu) == 0) throw bad("mtu", params.text("mtu"), "0, 256, 512, 1024, 2048 or 4096");
  const std::string& wait_mode = params.string("waitMode");
  if (wait_mode != "epoll" && wait_mode != "busy") throw bad("waitMode", wait_mode, "epoll or busy");
  s.busy_poll = wait_mode == "busy";
  const std::string& connect_at = params.string("connectAt");
  if (connect_at != "start" && connect_at != "first-use") throw bad("connectAt", connect_at, "start or first-use");
  s.connect_at_start = connect_at == "start";
  s.recv_buffer_size = params.unsigned_integer("recvBufferSize");
  s.recv_depth = params.unsigned_integer("recvDepth");
  s.recv_pool_bytes = params.unsigned_integer("recvPoolSize");
  if (s.recv_pool_bytes < s.recv_buffer_size * s.recv_depth)
    throw std::invalid_argument("parameter recvPoolSize (" + std::to_string(s.recv_pool_bytes) +
                                " B) cannot hold recvDepth buffers of recvBufferSize for even one connection");
  const std::string& srq = params.string("srq");
  if (srq == "auto") {
    s.srq = Srq::automatic;
  } else if (srq == "never") {
    s.srq = Srq::never;
  } else {
    throw bad("srq", srq, "auto or never");
  }
  s.send_depth = params.unsigned_integer("sendDepth");
  s.send_queue = params.unsigned_integer("sendQueue");
  s.inline_threshold = params.unsigned_integer("inlineThreshold");
  const std::string& numa = params.string("numaNode");
  if (numa == "policy") {
    s.numa = Numa::policy;
  } else if (numa == "device") {
    s.numa = Numa::device;
  } else if (!numa.empty() && numa.size() <= 4 && std::all_of(numa.begin(), numa.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    s.numa = Numa::node;
    s.numa_node = std::stoi(numa);
  } else {
    throw bad("numaNode", numa, "policy, device or a NUMA node number");
  }
  s.reconnect_min = std::chrono::milliseconds(params.unsigned_integer("reconnectMin"));
  s.reconnect_max = std::chrono::milliseconds(
      std::max(params.unsigned_integer("reconnectMax"), params.unsigned_integer("reconnectMin")));
  s.resolve_timeout = std::chrono::milliseconds(params.unsigned_integer("resolveTimeout"));
  s.max_frame_size = max_frame_size;
  return s;
}

}  // namespace daqx::ptibv
