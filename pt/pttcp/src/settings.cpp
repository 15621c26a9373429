// pttcp's parameters and their checks.
#include "settings.hpp"

#include "daqx/pt/connection_settings.hpp"

namespace daqx::pttcp {

std::vector<ParamSpec> parameter_specs() {
  return pt::concatenate(
      pt::connection_parameter_specs(),
      {
          {"mode", ParamType::string, "latency", "",
           "latency: write each frame at once; throughput: coalesce frames into large writes", {}, {}},
          {"packSize", ParamType::unsigned_integer, "262144", "bytes",
           "throughput mode: write when this many bytes are queued for a connection", 4096, 64.0 * 1024 * 1024},
          {"packTimeout", ParamType::unsigned_integer, "200", "microseconds",
           "throughput mode: write at the latest when the oldest queued frame is this old", 1, 1e6},
          {"sendBuffer", ParamType::unsigned_integer, "0", "bytes", "SO_SNDBUF of outgoing sockets (0: kernel default)", 0,
           1 << 30},
          {"receiveBuffer", ParamType::unsigned_integer, "0", "bytes", "SO_RCVBUF of incoming sockets (0: kernel default)",
           0, 1 << 30},
          {"copyThreshold", ParamType::unsigned_integer, "16384", "bytes",
           "received frames up to this size are copied out of the staging buffer; larger ones are read in place", 64,
           262144},
      });
}

Settings Settings::from(const ParamSet& params) {
  Settings s;
  s.throughput_mode = pt::choice(params, "mode", {"latency", "throughput"}) == 1;
  s.pack_bytes = params.unsigned_integer("packSize");
  s.pack_timeout = std::chrono::microseconds(params.unsigned_integer("packTimeout"));
  s.send_buffer = static_cast<int>(params.unsigned_integer("sendBuffer"));
  s.receive_buffer = static_cast<int>(params.unsigned_integer("receiveBuffer"));
  s.copy_threshold = params.unsigned_integer("copyThreshold");
  return s;
}

TransportCapabilities describe(const ParamSet&) {
  // A byte stream (no gather limit), coalescing in throughput mode, reachable by any TCP client.
  return {.coalescing = true, .plain_tcp_port = true, .frames_on_plain_tcp = true, .connection_manager = "tcp"};
}

}  // namespace daqx::pttcp
