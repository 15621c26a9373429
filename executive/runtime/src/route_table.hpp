// Where a frame for an application goes: the local host that takes it, or the one connection to the remote
// endpoint of the application's context. Built once before any application starts; read without a lock.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "daqx/api/frame.hpp"
#include "daqx/api/transport.hpp"

namespace daqx::detail {

class ApplicationHost;

inline constexpr PeerId kNoPeer = ~PeerId{0};

// An endpoint of another context that applications here may send to, and this context's one connection to it:
// named at configure when the connection plan has it, else by the first frame sent there.
struct RemoteEndpoint {
  Transport* transport = nullptr;  // the transport it is reached through
  EndpointAddress address;
  std::string context;  // the URL of the context it belongs to
  bool planned = false;
  std::atomic<PeerId> peer{kNoPeer};  // kNoPeer until named; then for good
};

struct Route {
  ApplicationHost* local = nullptr;  // same context: direct hand-over
  RemoteEndpoint* remote = nullptr;  // else: through its connection
  std::string network;               // the target's network
};

class RouteTable {
 public:
  const Route* find(Tid target) const noexcept {
    auto found = routes_.find(target);
    return found == routes_.end() ? nullptr : &found->second;
  }
  ApplicationHost* local_application(Tid tid) const noexcept {
    const Route* route = find(tid);
    return route == nullptr ? nullptr : route->local;
  }
  // This context's applications, in partition order.
  const std::vector<ApplicationHost*>& local_applications() const noexcept { return local_; }

  // Building (before any application starts).
  void add_local(Tid tid, ApplicationHost& host);
  // The remote endpoint `address` reached through `transport`, made at its first mention (one connection per
  // remote endpoint); a planned one is named at once, so that peer ids are the same in every run of the same
  // partition when routes are added in partition order.
  RemoteEndpoint& remote_endpoint(Transport& transport, const EndpointAddress& address, const std::string& context,
                                  bool planned);
  void add_remote(Tid tid, RemoteEndpoint& remote, const std::string& network);

  // The connection to `remote`, named now if it is not yet (a send outside the plan); kNoPeer when the transport
  // refused to name it (logged once).
  PeerId connection_to(RemoteEndpoint& remote) noexcept;

  // For the status of `transport`: its planned outgoing connections, and each outgoing connection of `connections`
  // labelled with the remote endpoint and context it goes to.
  std::size_t planned_outgoing(const Transport& transport) const;
  void label_outgoing(const Transport& transport, std::vector<ConnectionInfo>& connections) const;

  void clear();

 private:
  std::unordered_map<Tid, Route> routes_;
  std::vector<ApplicationHost*> local_;
  // Every remote endpoint some route goes to (never shrinks while routes point into it). Naming a connection
  // outside the plan takes remotes_mutex_; the send path reads RemoteEndpoint::peer without it.
  std::vector<std::unique_ptr<RemoteEndpoint>> remotes_;
  std::map<std::pair<const Transport*, std::string>, RemoteEndpoint*> remote_by_address_;
  mutable std::mutex remotes_mutex_;
};

}  // namespace daqx::detail
