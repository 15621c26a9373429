// The partition's sockets compared by address: two contexts or endpoints written differently (localhost and
// 127.0.0.1, a host name and its address, a wildcard and an address of its host) that are one socket are refused
// with both named, instead of the second bind failing when the partition starts.
#include "daqx/executive/partition.hpp"

#include <netinet/in.h>

#include <cstring>
#include <optional>
#include <stdexcept>
#include <unordered_map>

#include "daqx/pt/host_resolver.hpp"
#include "daqx/services/text.hpp"

namespace daqx::config {
namespace {

using strings::concatenate;

// A host's address as the bind would take it: family and address bytes (no port), and what it is.
struct Address {
  std::string key;      // family and address bytes; the host's name when it does not resolve
  std::string text;     // as people read it: "127.0.0.1"
  bool wildcard = false;  // 0.0.0.0 or ::: every address of the machine
  bool loopback = false;  // 127.0.0.0/8 or ::1: an address of each machine alone
};

Address address_of(const std::string& host) {
  Address address;
  std::optional<pt::SocketAddress> resolved;
  try {
    resolved = pt::HostResolver::shared().resolve(host, 0);
  } catch (const std::runtime_error&) {
    // Not resolvable here (a host only its own network knows): compared as written, as the parser does.
  }
  if (!resolved || (resolved->get()->sa_family != AF_INET && resolved->get()->sa_family != AF_INET6)) {
    address.key = concatenate({"name:", host});
    address.text = host;
    for (char& c : address.key) c = strings::lower(c);
    return address;
  }
  if (resolved->get()->sa_family == AF_INET) {
    const in_addr bytes = reinterpret_cast<const sockaddr_in*>(resolved->get())->sin_addr;
    const std::uint32_t value = ntohl(bytes.s_addr);
    address.key = concatenate({"4:", std::string_view(reinterpret_cast<const char*>(&bytes), sizeof bytes)});
    address.wildcard = value == INADDR_ANY;
    address.loopback = (value >> 24) == 127;
  } else {
    const in6_addr bytes = reinterpret_cast<const sockaddr_in6*>(resolved->get())->sin6_addr;
    address.key = concatenate({"6:", std::string_view(reinterpret_cast<const char*>(&bytes), sizeof bytes)});
    address.wildcard = IN6_IS_ADDR_UNSPECIFIED(&bytes);
    address.loopback = IN6_IS_ADDR_LOOPBACK(&bytes);
  }
  address.text = pt::address_text(resolved->get());
  address.text.erase(address.text.rfind(':'));  // the port, 0 here
  return address;
}

struct Socket {
  std::string what;  // "context URL 'http://...'" or "endpoint 'host:port' (tcp)"
  const SourceLocation* where;
  Address address;
  std::string machine;  // the key of the address of the context's host: where a wildcard or loopback binds
  std::uint16_t port;
};

class SocketCheck {
 public:
  explicit SocketCheck(const Partition& partition) : partition_(partition) {}

  std::vector<std::string> run() {
    // Every name looked up at once before any is waited for: a partition of many hosts costs one lookup's time.
    for (const ContextConfig& context : partition_.contexts) {
      pt::HostResolver::shared().prefetch(context.host);
      for (const EndpointConfig& endpoint : context.endpoints)
        if (!endpoint.hostname.empty()) pt::HostResolver::shared().prefetch(endpoint.hostname);
    }
    for (const ContextConfig& context : partition_.contexts) {
      if (context.host.empty() || context.port == 0) continue;
      const Address host = resolved(context.host);
      add(Socket{concatenate({"context URL ", strings::quoted(context.url)}), &context.where, host, host.key, context.port});
      for (const EndpointConfig& endpoint : context.endpoints) {
        if (endpoint.hostname.empty() || endpoint.port == 0) continue;
        add(Socket{concatenate({"endpoint ", strings::quoted(concatenate({endpoint.hostname, ":", std::to_string(endpoint.port)})),
                                " (", endpoint.protocol, ")"}),
                   &endpoint.where, resolved(endpoint.hostname), host.key, endpoint.port});
      }
    }
    return std::move(messages_);
  }

 private:
  const Address& resolved(const std::string& host) {
    auto found = addresses_.find(host);
    if (found == addresses_.end()) found = addresses_.emplace(host, address_of(host)).first;
    return found->second;
  }

  // Compared with the sockets before it through three maps, so a partition of any size is checked in one pass.
  void add(Socket socket) {
    const std::string port = std::to_string(socket.port);
    // A loopback address is one per machine: the same one on two machines is two sockets.
    const std::string exact = concatenate({socket.address.loopback ? socket.machine : "", "|", socket.address.key, "|", port});
    const std::string on_machine = concatenate({socket.machine, "|", port});
    std::optional<std::size_t> clash;
    if (!socket.address.wildcard) {
      if (const auto found = by_address_.find(exact); found != by_address_.end()) clash = found->second;
    }
    if (!clash) {
      if (const auto found = wildcard_on_machine_.find(on_machine); found != wildcard_on_machine_.end()) clash = found->second;
    }
    if (!clash && socket.address.wildcard) {
      if (const auto found = any_on_machine_.find(on_machine); found != any_on_machine_.end()) clash = found->second;
    }
    if (clash) {
      const Socket& first = sockets_[*clash];
      const bool overlap = socket.address.wildcard || first.address.wildcard;
      messages_.push_back(concatenate(
          {socket.where->text(), ": ", socket.what, " is ", overlap ? "on the same port as " : "the same socket as ",
           first.what, " at line ", std::to_string(first.where->line), " (",
           overlap ? concatenate({"a wildcard address takes port ", port, " on every address of its host"})
                   : concatenate({"both are ", socket.address.text, ":", port}),
           "): the second bind would fail"}));
      return;
    }
    const std::size_t index = sockets_.size();
    if (!socket.address.wildcard) by_address_.emplace(exact, index);
    if (socket.address.wildcard) wildcard_on_machine_.emplace(on_machine, index);
    any_on_machine_.emplace(on_machine, index);
    sockets_.push_back(std::move(socket));
  }

  const Partition& partition_;
  std::unordered_map<std::string, Address> addresses_;  // by host as written
  std::vector<Socket> sockets_;
  std::unordered_map<std::string, std::size_t> by_address_;           // address and port
  std::unordered_map<std::string, std::size_t> wildcard_on_machine_;  // machine and port, of wildcard sockets
  std::unordered_map<std::string, std::size_t> any_on_machine_;       // machine and port, of every socket
  std::vector<std::string> messages_;
};

}  // namespace

std::vector<std::string> check_same_sockets(const Partition& partition) { return SocketCheck(partition).run(); }

}  // namespace daqx::config
