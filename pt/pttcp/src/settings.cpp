// pttcp's parameters and their checks.
#include "settings.hpp"

#include "daqx/pt/connection_settings.hpp"

namespace daqx::pttcp {

std::vector<ParamSpec> parameter_specs() {
  return pt::concatenate(
      pt::connection_parameter_specs(),
      {
          {"sendBuffer", ParamType::unsigned_integer, "0", "bytes", "SO_SNDBUF of outgoing sockets (0: kernel default)", 0,
           1 << 30},
          {"receiveBuffer", ParamType::unsigned_integer, "0", "bytes", "SO_RCVBUF of incoming sockets (0: kernel default)",
           0, 1 << 30},
          {"copyThreshold", ParamType::unsigned_integer, "16384", "bytes",
           "received frames up to this size are copied out of the staging buffer; larger ones are read in place", 64,
           262144},
          {"stallTimeout", ParamType::unsigned_integer, "10000", "ms",
           "an incoming connection that stops for this long in the middle of a frame is closed and counted "
           "(stalled_connections); 0: never",
           0, 3600000},
      });
}

Settings Settings::from(const ParamSet& params) {
  Settings s;
  s.send_buffer = static_cast<int>(params.unsigned_integer("sendBuffer"));
  s.receive_buffer = static_cast<int>(params.unsigned_integer("receiveBuffer"));
  s.copy_threshold = params.unsigned_integer("copyThreshold");
  s.stall_timeout = std::chrono::milliseconds(params.unsigned_integer("stallTimeout"));
  return s;
}

mem::PoolConfig receive_pool_config() {
  // 256 B .. 1 MiB blocks; larger frames arrive in chains of 1 MiB blocks. Views (descriptors only) so that a
  // multipart frame is split into its parts without a copy (take_parts): one per part the applications hold.
  mem::PoolConfig config = mem::PoolConfig::geometric("recv", 256, 1u << 20, 1u << 20, 256u << 20);
  config.views = 16384;
  return config;
}

TransportCapabilities describe(const ParamSet& params) {
  // A byte stream (no gather limit), coalescing in throughput mode, reachable by any TCP client; a socket per
  // connection, the receive pool, and a staging buffer per incoming connection that carried data.
  return {.coalescing = true,
          .plain_tcp_port = true,
          .frames_on_plain_tcp = true,
          .connection_manager = "tcp",
          .descriptors_per_connection = 1,
          .pool_bytes = receive_pool_config().max_bytes(),
          .receive_bytes_per_incoming = Settings::from(params).staging_bytes,
          .threads = pt::kConnectionTransportThreads};
}

}  // namespace daqx::pttcp
