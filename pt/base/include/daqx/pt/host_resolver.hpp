// Host names to socket addresses for the transports of a module: each name looked up once and then answered
// from memory, the names of many peers looked up at the same time, numeric addresses never looked up.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "daqx/pt/socket_address.hpp"

namespace daqx::pt {

class HostResolver {
 public:
  // The module's own (pt/base is linked into each transport module, and into the executive): shared by every
  // transport of the module. Never destroyed: a lookup may still be in flight when the process exits.
  static HostResolver& shared();

  HostResolver() = default;
  ~HostResolver();  // cancels the lookups in flight, or waits for them
  HostResolver(const HostResolver&) = delete;
  HostResolver& operator=(const HostResolver&) = delete;

  // Starts looking the name up in the background unless it is an address, known, or being looked up already;
  // returns at once. Lookups started this way run concurrently (glibc's getaddrinfo_a).
  void prefetch(const std::string& host);
  // The address of host:port, IPv4 preferred where a name has both: an address as it is; a name from memory, or
  // from its lookup in flight (waited for), or looked up now. Throws std::runtime_error naming the host, as
  // resolve_address does; a name that failed is looked up again when asked again.
  SocketAddress resolve(const std::string& host, std::uint16_t port);
  // Names looked up so far (each success once, each failure each time): what the memory saves shows here.
  std::size_t lookups() const;

 private:
  struct Lookup;  // one name's getaddrinfo_a request
  std::shared_ptr<Lookup> start_lookup(const std::string& host);  // with mutex_ held
  SocketAddress finish(const std::shared_ptr<Lookup>& lookup);     // waits for it, then remembers or forgets it

  mutable std::mutex mutex_;
  std::map<std::string, SocketAddress, std::less<>> known_;  // port 0
  std::map<std::string, std::shared_ptr<Lookup>, std::less<>> in_flight_;
  std::size_t lookups_ = 0;
};

}  // namespace daqx::pt
