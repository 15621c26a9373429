// ptshm's parameters and their checks.
#include "settings.hpp"

#include <stdexcept>
#include <string>

#include "daqx/pt/connection_settings.hpp"

namespace daqx::ptshm {

std::vector<ParamSpec> parameter_specs() {
  return pt::concatenate(
      pt::connection_parameter_specs(),
      {
          {"ringEntries", ParamType::unsigned_integer, "4096", "entries",
           "block references in flight per connection (a power of two): a frame of n blocks takes n until the receiver "
           "releases them",
           64, 1u << 20},
          {"receiveDescriptors", ParamType::unsigned_integer, "65536", "blocks",
           "blocks of peers that this context's applications can hold at once (descriptors of pt/shm/recv)", 256,
           1u << 24},
          {"copyPoolSize", ParamType::unsigned_integer, "67108864", "bytes",
           "shared pool that frames from pools not in shared memory are copied into (counted in frames_copied)",
           1u << 20, std::uint64_t{1} << 36},
          {"passOnBlocks", ParamType::unsigned_integer, "4096", "blocks",
           "blocks received from a peer that one connection passes on to another peer by reference at once (the BU's "
           "records to a monitor, say); more are copied into the copy pool (frames_copied), so that a slow or stopped "
           "receiver holds at most this many of third contexts' blocks (a stream's depth bounds its records first). "
           "0: always copied",
           0, 1u << 20},
      });
}

Settings Settings::from(const ParamSet& params) {
  Settings s;
  s.ring_entries = static_cast<std::uint32_t>(params.unsigned_integer("ringEntries"));
  if ((s.ring_entries & (s.ring_entries - 1)) != 0)
    throw std::invalid_argument("ringEntries must be a power of two, not " + std::to_string(s.ring_entries));
  s.receive_descriptors = params.unsigned_integer("receiveDescriptors");
  s.copy_pool_bytes = params.unsigned_integer("copyPoolSize");
  s.pass_on_blocks = params.unsigned_integer("passOnBlocks");
  return s;
}

mem::PoolConfig copy_pool_config(const Settings& settings) {
  mem::PoolConfig copies = mem::PoolConfig::geometric("copy", 256, 1u << 20, 1u << 20, settings.copy_pool_bytes);
  copies.shared_memory = true;
  return copies;
}

TransportCapabilities describe(const ParamSet& params) {
  // Frames by reference, small ones packed in throughput mode, connections made over a Unix socket.
  // A Unix socket per connection; the copy pool (received frames are views of the peers' memory).
  return {.memory_registration = true,
          .coalescing = true,
          .shared_memory_pools = true,
          .connection_manager = "unix",
          .descriptors_per_connection = 1,
          .pool_bytes = copy_pool_config(Settings::from(params)).max_bytes(),
          .threads = pt::kConnectionTransportThreads};
}

}  // namespace daqx::ptshm
