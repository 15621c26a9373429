// IP addresses as transports use them: a host name or address and a port resolved to a socket address
// (IPv4 preferred where a name has both), and a socket address as "host:port" for logs and pages.
#pragma once

#include <netdb.h>
#include <sys/socket.h>

#include <cstdint>
#include <string>

namespace daqx::pt {

struct SocketAddress {
  sockaddr_storage storage{};
  socklen_t length = 0;
  const sockaddr* get() const noexcept { return reinterpret_cast<const sockaddr*>(&storage); }
  sockaddr* get() noexcept { return reinterpret_cast<sockaddr*>(&storage); }
};

// getaddrinfo for a stream socket; passive: for binding. Throws std::runtime_error naming the host.
SocketAddress resolve_address(const std::string& host, std::uint16_t port, bool passive = false);

// The address to use from a getaddrinfo answer: the first IPv4 one, else the first; throws when it is empty.
SocketAddress preferred_address(const addrinfo* found);

// "host:port", "?" when there is no address or it is not IPv4 or IPv6.
std::string address_text(const sockaddr* address);

// strerror, for messages.
std::string errno_text(int error);

}  // namespace daqx::pt
