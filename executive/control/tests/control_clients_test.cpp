// Clients of the control server: many at once, and Poco's (ControlClient, as daqxctl uses).
#include <catch2/catch.hpp>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "daqx/control/control_client.hpp"
#include "../../../tests/support/fake_control_model.hpp"
#include "../../../tests/support/http_exchange.hpp"
#include "../../../tests/support/json_reader.hpp"

using daqx::State;
using namespace daqx::test;

TEST_CASE("the server answers many clients at once", "[http]") {
  ServedControlModel served;
  std::atomic<int> answered{0};
  std::vector<std::thread> clients;
  for (int client = 0; client < 8; ++client) {
    clients.emplace_back([&, client] {
      for (int i = 0; i < 25; ++i) {
        const char* target = (client + i) % 3 == 0 ? "/metrics" : (client + i) % 3 == 1 ? "/" : "/api/applications";
        if (get(served.port(), target).status == 200) ++answered;
      }
    });
  }
  for (std::thread& client : clients) client.join();
  CHECK(answered == 8 * 25);
}

TEST_CASE("a Poco client (ControlClient, as daqxctl uses) drives the API", "[http]") {
  ServedControlModel served;
  const daqx::ControlClient client("http://127.0.0.1:" + std::to_string(served.port()));
  const daqx::HttpReply reply = client.post("/api/transition", command_body("configure"));
  REQUIRE(reply.status == 200);
  CHECK(parse_json(reply.body)["ok"].boolean == true);
  CHECK(served.model.state_of(3) == State::configured);
  const daqx::HttpReply status = client.get("/api/applications/3");
  REQUIRE(status.status == 200);
  CHECK(parse_json(status.body)["state"].string == "Configured");
}
