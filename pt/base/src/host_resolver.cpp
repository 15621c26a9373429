// Host names of a module's transports: looked up concurrently with getaddrinfo_a, remembered for the process's life.
#include "daqx/pt/host_resolver.hpp"

#include <netdb.h>
#include <netinet/in.h>

#include <cerrno>
#include <stdexcept>

namespace daqx::pt {
namespace {

SocketAddress with_port(SocketAddress address, std::uint16_t port) {
  if (address.storage.ss_family == AF_INET)
    reinterpret_cast<sockaddr_in*>(&address.storage)->sin_port = htons(port);
  else if (address.storage.ss_family == AF_INET6)
    reinterpret_cast<sockaddr_in6*>(&address.storage)->sin6_port = htons(port);
  return address;
}

addrinfo stream_hints(int flags) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = flags;
  return hints;
}

std::runtime_error unresolved(const std::string& host, int error) {
  return std::runtime_error("cannot resolve '" + host + "': " +
                            (error == EAI_SYSTEM ? errno_text(errno) : std::string(gai_strerror(error))));
}

}  // namespace

struct HostResolver::Lookup {
  explicit Lookup(std::string name) : host(std::move(name)), hints(stream_hints(0)) {
    request.ar_name = host.c_str();
    request.ar_request = &hints;
  }
  ~Lookup() {
    if (request.ar_result != nullptr) freeaddrinfo(request.ar_result);
  }
  Lookup(const Lookup&) = delete;
  Lookup& operator=(const Lookup&) = delete;

  std::string host;
  addrinfo hints;
  gaicb request{};
  std::mutex finishing;  // the first to wait for it reads the answer; the others find it known (or failed)
  bool finished = false;
};

HostResolver& HostResolver::shared() {
  static HostResolver* const resolver = new HostResolver;
  return *resolver;
}

HostResolver::~HostResolver() {
  for (auto& [host, lookup] : in_flight_) {
    if (gai_cancel(&lookup->request) == EAI_CANCELED) continue;
    const gaicb* waiting[] = {&lookup->request};
    while (gai_error(&lookup->request) == EAI_INPROGRESS) gai_suspend(waiting, 1, nullptr);
  }
}

std::shared_ptr<HostResolver::Lookup> HostResolver::start_lookup(const std::string& host) {
  auto lookup = std::make_shared<Lookup>(host);
  gaicb* requests[] = {&lookup->request};
  const int error = getaddrinfo_a(GAI_NOWAIT, requests, 1, nullptr);
  if (error != 0) return nullptr;  // not started (EAI_AGAIN, EAI_MEMORY): looked up in the caller instead
  ++lookups_;
  in_flight_.emplace(host, lookup);
  return lookup;
}

void HostResolver::prefetch(const std::string& host) {
  addrinfo numeric_hints = stream_hints(AI_NUMERICHOST);
  addrinfo* numeric = nullptr;
  if (getaddrinfo(host.c_str(), nullptr, &numeric_hints, &numeric) == 0) {  // an address: nothing to look up
    freeaddrinfo(numeric);
    return;
  }
  std::lock_guard lock(mutex_);
  if (known_.count(host) == 0 && in_flight_.count(host) == 0) start_lookup(host);
}

SocketAddress HostResolver::finish(const std::shared_ptr<Lookup>& lookup) {
  std::lock_guard finishing(lookup->finishing);
  if (!lookup->finished) {
    const gaicb* waiting[] = {&lookup->request};
    while (gai_error(&lookup->request) == EAI_INPROGRESS) gai_suspend(waiting, 1, nullptr);
    lookup->finished = true;
    std::lock_guard lock(mutex_);
    in_flight_.erase(lookup->host);
    if (gai_error(&lookup->request) == 0 && lookup->request.ar_result != nullptr)
      known_.emplace(lookup->host, preferred_address(lookup->request.ar_result));
  }
  std::lock_guard lock(mutex_);
  auto known = known_.find(lookup->host);
  if (known != known_.end()) return known->second;
  const int error = gai_error(&lookup->request);
  throw unresolved(lookup->host, error != 0 ? error : EAI_NONAME);
}

SocketAddress HostResolver::resolve(const std::string& host, std::uint16_t port) {
  addrinfo numeric_hints = stream_hints(AI_NUMERICHOST);
  addrinfo* numeric = nullptr;
  if (getaddrinfo(host.c_str(), nullptr, &numeric_hints, &numeric) == 0) {
    SocketAddress address = preferred_address(numeric);
    freeaddrinfo(numeric);
    return with_port(address, port);
  }
  std::shared_ptr<Lookup> lookup;
  {
    std::lock_guard lock(mutex_);
    auto known = known_.find(host);
    if (known != known_.end()) return with_port(known->second, port);
    auto in_flight = in_flight_.find(host);
    lookup = in_flight != in_flight_.end() ? in_flight->second : start_lookup(host);
  }
  if (lookup) return with_port(finish(lookup), port);
  // The background lookup could not start: look it up here.
  addrinfo hints = stream_hints(0);
  addrinfo* found = nullptr;
  const int error = getaddrinfo(host.c_str(), nullptr, &hints, &found);
  std::lock_guard lock(mutex_);
  ++lookups_;
  if (error != 0) throw unresolved(host, error);
  const SocketAddress address = preferred_address(found);
  freeaddrinfo(found);
  known_.emplace(host, address);
  return with_port(address, port);
}

std::size_t HostResolver::lookups() const {
  std::lock_guard lock(mutex_);
  return lookups_;
}

}  // namespace daqx::pt
