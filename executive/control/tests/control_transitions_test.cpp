// Transitions through the control API: of one application or the whole context, refused, failing, and bodies
// that are not a command.
#include <catch2/catch.hpp>

#include <string>
#include <utility>
#include <vector>

#include "../../../tests/support/fake_control_model.hpp"
#include "../../../tests/support/http_exchange.hpp"
#include "../../../tests/support/json_reader.hpp"

using daqx::Command;
using daqx::State;
using namespace daqx::test;

TEST_CASE("a transition through the API changes the application's state", "[http]") {
  ServedControlModel served;
  const HttpAnswer answer = post(served.port(), "/api/applications/2/transition", command_body("configure"));
  REQUIRE(answer.status == 200);
  const Json result = parse_json(answer.body);
  CHECK(result["ok"].boolean == true);
  CHECK(result["message"].is(Json::Type::string));
  REQUIRE(result["states"].size() == 1);
  CHECK(result["states"][0]["tid"].number == 2);
  CHECK(result["states"][0]["state"].string == "Configured");
  CHECK(served.model.state_of(2) == State::configured);
  CHECK(served.model.state_of(1) == State::halted);
  CHECK(parse_json(get(served.port(), "/api/applications/2").body)["state"].string == "Configured");

  // Commands are case-insensitive, as command_from_string is.
  REQUIRE(post(served.port(), "/api/applications/2/transition", command_body("Enable")).status == 200);
  CHECK(served.model.state_of(2) == State::enabled);
}

TEST_CASE("an illegal transition is refused with 409 and the reason, and changes nothing", "[http]") {
  ServedControlModel served;
  const HttpAnswer answer = post(served.port(), "/api/applications/1/transition", command_body("enable"));
  REQUIRE(answer.status == 409);
  const Json result = parse_json(answer.body);
  CHECK(result["ok"].boolean == false);
  CHECK(result["message"].string == "tid 1: " + daqx::illegal_transition_reason(State::halted, Command::enable));
  CHECK(result["error"].string == result["message"].string);
  CHECK(result["states"][0]["state"].string == "Halted");
  CHECK(served.model.state_of(1) == State::halted);
}

TEST_CASE("a transition of an unknown application is a 404", "[http]") {
  ServedControlModel served;
  const HttpAnswer answer = post(served.port(), "/api/applications/77/transition", command_body("configure"));
  require_json_error(answer, 404);
  CHECK(parse_json(answer.body)["ok"].boolean == false);
  require_json_error(post(served.port(), "/api/applications/x7/transition", command_body("configure")), 400);
}

TEST_CASE("a context-wide transition drives every application of the context", "[http]") {
  ServedControlModel served;
  for (const auto& [command, state] : std::vector<std::pair<std::string, std::string>>{
           {"configure", "Configured"}, {"enable", "Enabled"}, {"stop", "Configured"}, {"halt", "Halted"}}) {
    const HttpAnswer answer = post(served.port(), "/api/transition", command_body(command));
    INFO(command << ": " << answer.body);
    REQUIRE(answer.status == 200);
    const Json result = parse_json(answer.body);
    REQUIRE(result["states"].size() == 4);
    for (std::size_t i = 0; i < 4; ++i) CHECK(result["states"][i]["state"].string == state);
  }
  require_json_error(post(served.port(), "/api/transition", command_body("stop")), 409);
}

TEST_CASE("a failing hook answers 422 and leaves the application Failed with its reason until halted", "[http]") {
  ServedControlModel served;
  REQUIRE(post(served.port(), "/api/applications/4/parameters", R"({"name":"fail_on_enable","value":"true"})")
              .status == 200);
  REQUIRE(post(served.port(), "/api/applications/4/transition", command_body("configure")).status == 200);
  const HttpAnswer failed = post(served.port(), "/api/applications/4/transition", command_body("enable"));
  REQUIRE(failed.status == 422);
  CHECK(parse_json(failed.body)["states"][0]["state"].string == "Failed");
  const Json application = parse_json(get(served.port(), "/api/applications/4").body);
  CHECK(application["state"].string == "Failed");
  CHECK(application["reason"].string == "enable hook threw: <disk> & \"full\"");

  REQUIRE(post(served.port(), "/api/applications/4/transition", command_body("enable")).status == 409);
  REQUIRE(post(served.port(), "/api/applications/4/transition", command_body("halt")).status == 200);
  CHECK(served.model.state_of(4) == State::halted);
}

TEST_CASE("a transition body that is not a command is refused with 400 and the valid commands", "[http]") {
  ServedControlModel served;
  const std::uint16_t port = served.port();
  for (const std::string target : {"/api/transition", "/api/applications/1/transition"}) {
    INFO(target);
    const HttpAnswer bad_json = post(port, target, R"({"command": "configure")");
    require_json_error(bad_json, 400);
    CHECK(parse_json(bad_json.body)["error"].string.starts_with("bad JSON: "));
    require_json_error(post(port, target, ""), 400);
    CHECK(parse_json(post(port, target, "").body)["error"].string.starts_with("empty body"));
    require_json_error(post(port, target, "[\"configure\"]"), 400);
    require_json_error(post(port, target, "\"configure\""), 400);
    require_json_error(post(port, target, "{}"), 400);
    require_json_error(post(port, target, R"({"command": null})"), 400);
    require_json_error(post(port, target, R"({"command": {"name": "configure"}})"), 400);
    require_json_error(post(port, target, std::string(100000, '[')), 400);
    const HttpAnswer unknown = post(port, target, command_body("reboot"));
    require_json_error(unknown, 400);
    CHECK(parse_json(unknown.body)["error"].string ==
          "unknown command 'reboot': one of configure, enable, stop, halt");
    const HttpAnswer missing = post(port, target, R"({"verb":"configure"})");
    CHECK(parse_json(missing.body)["error"].string.find("configure, enable, stop, halt") != std::string::npos);
  }
  // A POST without Content-Length has no body, and is not left waiting for one.
  const HttpAnswer no_length =
      round_trip(port, "POST /api/transition HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  require_json_error(no_length, 400);
  CHECK(served.model.state_of(1) == State::halted);
  REQUIRE(still_answers(port));
}
