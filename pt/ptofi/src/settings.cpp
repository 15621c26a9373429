// ptofi's parameters and their checks, and what a provider lets it offer.
#include "settings.hpp"

#include <algorithm>
#include <stdexcept>

#include "daqx/pt/connection_settings.hpp"
#include "daqx/pt/message_cutter.hpp"
#include "fabric.hpp"

namespace daqx::ptofi {

std::vector<ParamSpec> parameter_specs() {
  return pt::concatenate(
      pt::concatenate(pt::connection_parameter_specs(), pt::message_parameter_specs()),
      {
          {"provider", ParamType::string, "tcp", "",
           "libfabric provider for FI_EP_MSG endpoints: tcp (any network), verbs (InfiniBand, RoCE, iWARP), ...", {},
           {}},
          {"registerMemory", ParamType::string, "auto", "",
           "auto: register pools with the domain when the provider asks for it (FI_MR_LOCAL); always; never", {}, {}},
          {"srx", ParamType::string, "auto", "",
           "auto: incoming connections share one receive context where the provider has them and carries 8 bytes of "
           "remote CQ data (the sender's connection id); never: receive buffers posted to each connection", {}, {}},
      });
}

Settings Settings::from(const ParamSet& params) {
  Settings s;
  s.provider = params.string("provider");
  if (s.provider.empty()) throw std::invalid_argument("parameter provider is empty: name a libfabric provider (tcp, verbs, ...)");
  switch (pt::choice(params, "registerMemory", {"auto", "always", "never"})) {
    case 0: s.registration = Registration::automatic; break;
    case 1: s.registration = Registration::always; break;
    default: s.registration = Registration::never; break;
  }
  s.srx = pt::choice(params, "srx", {"auto", "never"}) == 0 ? Srx::automatic : Srx::never;
  return s;
}

TransportCapabilities describe(const ParamSet& params) {
  const Settings settings = Settings::from(params);
  TransportCapabilities c;
  bool local_registration = settings.provider != "tcp";  // what we assume of a provider this machine lacks
  try {
    InfoPtr info = find_provider(settings.provider, nullptr, nullptr, 0);
    local_registration = needs_local_registration(*info);
    c.gather_limit = std::clamp<std::size_t>(info->tx_attr->iov_limit, 1, pt::MessagePieces::kMaxPieces);
  } catch (const std::exception&) {
    c.gather_limit = 1;
  }
  c.memory_registration = settings.registration == Settings::Registration::always ||
                          (settings.registration == Settings::Registration::automatic && local_registration);
  // Providers that want memory registered before they touch it are the ones on RDMA devices (verbs, efa, ...).
  c.rdma_device = local_registration;
  c.coalescing = true;
  c.credit_flow = true;
  c.posted_receive_buffers = true;
  // The tcp provider listens on the endpoint's TCP port, where a plain socket can reach it.
  c.plain_tcp_port = settings.provider == "tcp";
  c.connection_manager = "libfabric";
  // The tcp provider keeps a socket per connection; the RDMA ones none (queue pairs, events on shared channels).
  c.descriptors_per_connection = settings.provider == "tcp" ? 1 : 0;
  c.pool_bytes = pt::message_pool_bytes(pt::MessageSettings::from(params));
  c.threads = pt::kConnectionTransportThreads;
  return c;
}

}  // namespace daqx::ptofi
