// The host resolver: a name looked up once for the process, many names at a time, addresses never looked up,
// a name that does not resolve named in the error and looked up again next time.
#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <string>
#include <thread>
#include <vector>

#include "daqx/pt/host_resolver.hpp"

using daqx::pt::HostResolver;
using daqx::pt::SocketAddress;

namespace {

// "host:port" of an address.
std::string text(const SocketAddress& address) { return daqx::pt::address_text(address.get()); }

std::string port_text(std::size_t port) { return std::string(1, ':').append(std::to_string(port)); }

}  // namespace

TEST_CASE("the host resolver looks a name up once and answers every later port of it from memory", "[pt][resolver]") {
  HostResolver resolver;
  CHECK(text(resolver.resolve("localhost", 20001)) == "127.0.0.1:20001");
  CHECK(resolver.lookups() == 1);
  for (std::uint16_t port = 20011; port < 20100; port += 10)
    CHECK(text(resolver.resolve("localhost", port)) == "127.0.0.1" + port_text(port));
  CHECK(resolver.lookups() == 1);
}

TEST_CASE("the host resolver never looks up a numeric address", "[pt][resolver]") {
  HostResolver resolver;
  CHECK(text(resolver.resolve("127.0.0.1", 20001)) == "127.0.0.1:20001");
  CHECK(text(resolver.resolve("::1", 20002)) == "::1:20002");
  resolver.prefetch("127.0.0.2");
  CHECK(resolver.lookups() == 0);
}

TEST_CASE("a name prefetched for many peers is looked up once, however many threads then ask", "[pt][resolver]") {
  HostResolver resolver;
  for (int peer = 0; peer < 64; ++peer) resolver.prefetch("localhost");
  CHECK(resolver.lookups() == 1);
  std::vector<std::string> answers(16);
  {
    std::vector<std::jthread> askers;
    for (std::size_t k = 0; k < answers.size(); ++k)
      askers.emplace_back([&, k] {
        try {
          answers[k] = text(resolver.resolve("localhost", static_cast<std::uint16_t>(30000 + k)));
        } catch (const std::exception& e) {
          answers[k] = e.what();
        }
      });
  }
  for (std::size_t k = 0; k < answers.size(); ++k) CHECK(answers[k] == "127.0.0.1" + port_text(30000 + k));
  CHECK(resolver.lookups() == 1);
}

TEST_CASE("a name that does not resolve is named in the error and looked up again when asked again", "[pt][resolver]") {
  HostResolver resolver;
  // .invalid never resolves (RFC 2606).
  CHECK_THROWS_WITH(resolver.resolve("no-such-host.invalid", 20001), Catch::StartsWith("cannot resolve 'no-such-host.invalid': "));
  resolver.prefetch("no-such-host.invalid");
  CHECK_THROWS_WITH(resolver.resolve("no-such-host.invalid", 20001), Catch::StartsWith("cannot resolve 'no-such-host.invalid': "));
  CHECK(resolver.lookups() == 2);
}
