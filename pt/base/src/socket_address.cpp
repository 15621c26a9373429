// Resolving and printing socket addresses.
#include "daqx/pt/socket_address.hpp"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace daqx::pt {

SocketAddress resolve_address(const std::string& host, std::uint16_t port, bool passive) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = passive ? AI_PASSIVE : 0;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(port);
  const int error = getaddrinfo(host.c_str(), service.c_str(), &hints, &found);
  if (error != 0) throw std::runtime_error("cannot resolve '" + host + "': " + gai_strerror(error));
  if (found == nullptr) throw std::runtime_error("cannot resolve '" + host + "': no address");
  const SocketAddress address = preferred_address(found);
  freeaddrinfo(found);
  return address;
}

SocketAddress preferred_address(const addrinfo* found) {
  if (found == nullptr) throw std::invalid_argument("preferred_address: no address to choose from");
  // Prefer IPv4 where a name has both: loopback tests and most DAQ networks are IPv4.
  const addrinfo* chosen = found;
  for (const addrinfo* a = found; a != nullptr; a = a->ai_next)
    if (a->ai_family == AF_INET) {
      chosen = a;
      break;
    }
  SocketAddress address;
  address.length = static_cast<socklen_t>(std::min<std::size_t>(chosen->ai_addrlen, sizeof address.storage));
  std::memcpy(&address.storage, chosen->ai_addr, address.length);
  return address;
}

std::string address_text(const sockaddr* address) {
  if (address == nullptr) return "?";
  char host[INET6_ADDRSTRLEN] = "?";
  unsigned port = 0;
  if (address->sa_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(address);
    inet_ntop(AF_INET, &in->sin_addr, host, sizeof host);
    port = ntohs(in->sin_port);
  } else if (address->sa_family == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(address);
    inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof host);
    port = ntohs(in6->sin6_port);
  } else {
    return "?";
  }
  return std::string(host).append(":").append(std::to_string(port));
}

std::string errno_text(int error) { return std::strerror(error); }

}  // namespace daqx::pt
