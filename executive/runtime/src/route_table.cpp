// The route table: routes to local hosts and remote endpoints, and naming a connection outside the plan.
#include "route_table.hpp"

#include <exception>

#include "daqx/services/log.hpp"

namespace daqx::detail {
namespace {

// The log source of the transport a remote endpoint is reached through (TransportBinding::prefix).
std::string transport_source(const RemoteEndpoint& remote) { return "pt/" + remote.address.protocol; }

}  // namespace

void RouteTable::add_local(Tid tid, ApplicationHost& host) {
  routes_[tid] = Route{&host, nullptr, ""};
  local_.push_back(&host);
}

RemoteEndpoint& RouteTable::remote_endpoint(Transport& transport, const EndpointAddress& address,
                                            const std::string& context, bool planned) {
  RemoteEndpoint*& known = remote_by_address_[{&transport, address.text()}];
  if (known != nullptr) return *known;
  auto remote = std::make_unique<RemoteEndpoint>();
  remote->transport = &transport;
  remote->address = address;
  remote->context = context;
  remote->planned = planned;
  if (planned) remote->peer.store(transport.connect(remote->address));
  known = remote.get();
  std::lock_guard lock(remotes_mutex_);
  remotes_.push_back(std::move(remote));
  return *known;
}

void RouteTable::add_remote(Tid tid, RemoteEndpoint& remote, const std::string& network) {
  routes_[tid] = Route{nullptr, &remote, network};
}

PeerId RouteTable::connection_to(RemoteEndpoint& remote) noexcept {
  std::lock_guard lock(remotes_mutex_);
  PeerId peer = remote.peer.load(std::memory_order_acquire);
  if (peer != kNoPeer) return peer;  // another sender named it meanwhile
  try {
    peer = remote.transport->connect(remote.address);
  } catch (const std::exception& e) {
    daqx::log(LogLevel::error, transport_source(remote),
              "cannot connect to " + remote.address.text() + " (context " + remote.context + "): " + e.what());
    return kNoPeer;
  }
  daqx::log(LogLevel::info, transport_source(remote),
            "connection to " + remote.address.text() + " (context " + remote.context +
                ") opened at first use: no application here declared it sends there");
  remote.peer.store(peer, std::memory_order_release);
  return peer;
}

std::size_t RouteTable::planned_outgoing(const Transport& transport) const {
  std::lock_guard lock(remotes_mutex_);
  std::size_t planned = 0;
  for (const auto& remote : remotes_)
    if (remote->transport == &transport && remote->planned) ++planned;
  return planned;
}

void RouteTable::label_outgoing(const Transport& transport, std::vector<ConnectionInfo>& connections) const {
  std::map<PeerId, const RemoteEndpoint*> named;  // what each outgoing connection goes to, for stable labels
  {
    std::lock_guard lock(remotes_mutex_);
    for (const auto& remote : remotes_) {
      const PeerId peer = remote->peer.load(std::memory_order_acquire);
      if (remote->transport == &transport && peer != kNoPeer) named[peer] = remote.get();
    }
  }
  for (ConnectionInfo& connection : connections) {
    if (!connection.outgoing) continue;
    auto name = named.find(connection.peer);
    if (name == named.end()) continue;
    connection.peer_endpoint = name->second->address.text();
    connection.peer_context = name->second->context;
    connection.planned = name->second->planned;
  }
}

void RouteTable::clear() {
  routes_.clear();
  local_.clear();
  remote_by_address_.clear();
  std::lock_guard lock(remotes_mutex_);
  remotes_.clear();
}

}  // namespace daqx::detail
