// ptibv's parameters and their checks.
#include "settings.hpp"

#include "daqx/pt/message_cutter.hpp"

#include <algorithm>
#include <stdexcept>

#include "daqx/services/number_text.hpp"

namespace daqx::ptibv {
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

namespace {

constexpr std::string_view kMtuValues = "0, 256, 512, 1024, 2048 or 4096";

// numaNode other than policy and device: a node number.
numbers::Parsed<int> parse_numa_node(std::string_view text) { return numbers::parse<int>(text, 0, 9999); }

// Checked where the values enter (ParamSpec::check), so a bad mtu or numaNode is refused with the partition.
std::string check_mtu(const ParamSet& params) {
  const std::uint64_t mtu = params.unsigned_integer("mtu");
  return mtu == 0 || mtu_enum(static_cast<std::uint32_t>(mtu)) != 0
             ? std::string()
             : pt::bad_parameter("mtu", params.text("mtu"), kMtuValues).what();
}

std::string check_numa_node(const ParamSet& params) {
  const std::string& numa = params.string("numaNode");
  if (numa == "policy" || numa == "device") return {};
  const numbers::Parsed<int> node = parse_numa_node(numa);
  return node ? std::string() : "numaNode (policy, device or a NUMA node number): " + node.error;
}

}  // namespace

std::vector<ParamSpec> parameter_specs() {
  return pt::concatenate(
      pt::concatenate(pt::connection_parameter_specs(), pt::message_parameter_specs()),
      {
          {"device", ParamType::string, "", "",
           "RDMA device by name (mlx5_0, rxe0) or by an IP address of its network interface; empty: the device the "
           "endpoint's address belongs to", {}, {}},
          {"port", ParamType::unsigned_integer, "0", "", "device port; 0: the one rdma_cm finds for the address", 0, 255},
          {"gidIndex", ParamType::integer, "-1", "",
           "GID table index for RoCE; -1: rdma_cm's choice for the address (RoCE v2 when the address is IPv4)", -1,
           1023},
          {"mtu", ParamType::unsigned_integer, "0", "bytes",
           "path MTU: 256, 512, 1024, 2048 or 4096 (no more than the port's active MTU); 0: the route's", 0, 4096, {},
           PeerUse::sends_to, check_mtu},
          {"srq", ParamType::string, "auto", "",
           "auto: receive buffers go to one shared receive queue when the device has them; never: per connection", {},
           {}, {"auto", "never"}},
          {"inlineThreshold", ParamType::unsigned_integer, "256", "bytes",
           "frames up to this size are copied into the work request (IBV_SEND_INLINE; capped by the device); 0: never",
           0, 4096},
          {"numaNode", ParamType::string, "policy", "",
           "where ptibv's own pools live: policy (the partition's pool rules), device (the device's NUMA node), or "
           "a node number", {}, {}, {}, PeerUse::sends_to, check_numa_node},
          {"resolveTimeout", ParamType::unsigned_integer, "2000", "ms", "rdma_cm address and route resolution timeout",
           10, 60000},
      });
}

TransportCapabilities describe(const ParamSet& params) {
  return {.memory_registration = true,
          .rdma_device = true,
          .inline_bytes = Settings::from(params).inline_threshold,  // capped per queue pair by the device
          .gather_limit = pt::MessagePieces::kMaxPieces,              // capped by the device once it is open
          .coalescing = true,
          .credit_flow = true,
          .posted_receive_buffers = true,
          .numa_placement = true,
          .connection_manager = "rdma_cm",
          .descriptors_per_connection = 0,  // queue pairs; rdma_cm's events come on one channel
          .pool_bytes = pt::message_pool_bytes(pt::MessageSettings::from(params)),
          .threads = pt::kConnectionTransportThreads};
}

Settings Settings::from(const ParamSet& params) {
  Settings s;
  s.device = params.string("device");
  s.port = static_cast<std::uint8_t>(params.unsigned_integer("port"));
  s.gid_index = static_cast<int>(params.integer("gidIndex"));
  s.mtu = static_cast<std::uint32_t>(params.unsigned_integer("mtu"));
  if (s.mtu != 0 && mtu_enum(s.mtu) == 0)
    throw pt::bad_parameter("mtu", params.text("mtu"), kMtuValues);
  s.srq = pt::choice(params, "srq", {"auto", "never"}) == 0 ? Srq::automatic : Srq::never;
  s.inline_threshold = params.unsigned_integer("inlineThreshold");
  const std::string& numa = params.string("numaNode");
  if (numa == "policy") {
    s.numa = Numa::policy;
  } else if (numa == "device") {
    s.numa = Numa::device;
  } else if (const numbers::Parsed<int> node = parse_numa_node(numa)) {
    s.numa = Numa::node;
    s.numa_node = *node;
  } else {
    throw pt::bad_parameter("numaNode", numa, "policy, device or a NUMA node number");
  }
  s.resolve_timeout = std::chrono::milliseconds(params.unsigned_integer("resolveTimeout"));
  return s;
}

}  // namespace daqx::ptibv
