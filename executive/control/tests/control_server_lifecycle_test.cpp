// The control server's life: listening on a free port or refusing one it cannot have, and a stop that closes the
// port and waits for no client.
#include <catch2/catch.hpp>

#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>

#include "daqx/control/control_server.hpp"
#include "../../../tests/support/fake_control_model.hpp"
#include "../../../tests/support/http_exchange.hpp"
#include "../../../tests/support/raw_client.hpp"

using namespace daqx::test;

TEST_CASE("the control server listens on a free port when asked for port 0 and tells which", "[http]") {
  ServedControlModel served;
  REQUIRE(served.port() != 0);
  REQUIRE(get(served.port(), "/").status == 200);
}

TEST_CASE("a control server on a port already taken is refused with the reason", "[http]") {
  ServedControlModel served;
  FakeControlModel other;
  try {
    daqx::ControlServer second(other, "127.0.0.1", served.port());
    FAIL("a second server listened on a port already taken");
  } catch (const std::runtime_error& error) {
    const std::string message = error.what();
    REQUIRE(message == "cannot listen on 127.0.0.1:" + std::to_string(served.port()) + ": Address already in use");
  }
  REQUIRE(still_answers(served.port()));
}

TEST_CASE("a control server on an address not of this host is refused with the reason", "[http]") {
  FakeControlModel model;
  // 192.0.2.0/24 is reserved for documentation: never an address of this machine.
  REQUIRE_THROWS_WITH(daqx::ControlServer(model, "192.0.2.1", 0),
                      Catch::StartsWith("cannot listen on 192.0.2.1:0: Cannot assign requested address"));
}

TEST_CASE("after stop the port is closed, and stop may be called again", "[http]") {
  FakeControlModel model;
  daqx::ControlServer server(model, "127.0.0.1", 0);
  server.start();
  const std::uint16_t port = server.port();
  REQUIRE(still_answers(port));
  server.stop();
  server.stop();
  REQUIRE_FALSE(RawClient(port).connected());
  REQUIRE_THROWS_AS(server.start(), std::logic_error);
}

TEST_CASE("a server stopped while a client waits on it ends without waiting for that client", "[http]") {
  FakeControlModel model;
  daqx::ControlServer server(model, "127.0.0.1", 0);
  server.start();
  RawClient stalled(server.port());
  stalled.send("GET / HTTP/1.1\r\n");  // never finished
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const auto started = std::chrono::steady_clock::now();
  server.stop();
  CHECK(std::chrono::steady_clock::now() - started < std::chrono::seconds(5));
}
