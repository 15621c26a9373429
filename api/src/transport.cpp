// Transport capabilities as text.
#include "daqx/api/transport.hpp"

namespace daqx {

std::string describe_capabilities(const TransportCapabilities& c) {
  std::string text;
  auto add = [&](bool on, const std::string& what) {
    if (!on) return;
    if (!text.empty()) text += ", ";
    text += what;
  };
  add(c.memory_registration, "memory registration");
  add(c.rdma_device, "RDMA device");
  add(c.inline_bytes > 0, "inline up to " + std::to_string(c.inline_bytes) + " B");
  add(true, c.gather_limit == 0 ? std::string("byte stream") : std::to_string(c.gather_limit) + " pieces per message");
  add(c.coalescing, "coalescing");
  add(c.busy_polling, "busy polling");
  add(c.credit_flow, "credit flow");
  add(c.posted_receive_buffers, "posted receive buffers");
  add(c.numa_placement, "NUMA placement");
  add(c.shared_memory_pools, "pools in shared memory");
  add(c.plain_tcp_port, c.frames_on_plain_tcp ? "frames on a plain TCP port" : "plain TCP port");
  add(!c.connection_manager.empty(), "connections by " + c.connection_manager);
  return text;
}

}  // namespace daqx

namespace daqx {

std::size_t Transport::post_batch(PeerId peer, std::span<mem::Ref> frames, SendStatus& stopped) noexcept {
  std::size_t taken = 0;
  for (mem::Ref& frame : frames) {
    stopped = post(peer, frame);
    if (stopped != SendStatus::ok) break;
    ++taken;
  }
  return taken;
}

}  // namespace daqx
