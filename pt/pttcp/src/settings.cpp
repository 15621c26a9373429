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

TransportCapabilities describe(const ParamSet&) {
  // A byte stream (no gather limit), coalescing in throughput mode, reachable by any TCP client.
  return {.coalescing = true, .plain_tcp_port = true, .frames_on_plain_tcp = true, .connection_manager = "tcp"};
}

}  // namespace daqx::pttcp
