// Parameters set through the control API: while Halted, refused when wrong or when not Halted.
#include <catch2/catch.hpp>

#include <string>

#include "../../../tests/support/fake_control_model.hpp"
#include "../../../tests/support/http_exchange.hpp"
#include "../../../tests/support/json_reader.hpp"

using namespace daqx::test;

TEST_CASE("parameters are set while Halted, refused with 400 when wrong and 409 when not Halted", "[http]") {
  ServedControlModel served;
  const std::uint16_t port = served.port();
  const std::string target = "/api/applications/1/parameters";
  const HttpAnswer set = post(port, target, R"({"name":"events_per_second","value":"250"})");
  REQUIRE(set.status == 200);
  CHECK(parse_json(set.body)["ok"].boolean == true);
  CHECK(parse_json(get(port, "/api/applications/1").body)["parameters"][0]["value"].string == "250");
  // A number is taken in its text form.
  REQUIRE(post(port, target, R"({"name":"events_per_second","value":300})").status == 200);
  CHECK(parse_json(get(port, "/api/applications/1").body)["parameters"][0]["value"].string == "300");

  const HttpAnswer bad_value = post(port, target, R"({"name":"events_per_second","value":"fast"})");
  require_json_error(bad_value, 400);
  CHECK(parse_json(bad_value.body)["error"].string == "not an unsigned integer: 'fast'");
  const HttpAnswer unknown_name = post(port, target, R"({"name":"colour","value":"red"})");
  require_json_error(unknown_name, 400);
  CHECK(parse_json(unknown_name.body)["error"].string == "unknown parameter 'colour'");
  require_json_error(post(port, target, R"({"name":"events_per_second"})"), 400);
  require_json_error(post(port, target, R"({"value":"1"})"), 400);
  require_json_error(post(port, target, R"({"name":"","value":"1"})"), 400);
  require_json_error(post(port, target, "name=events_per_second&value=1"), 400);
  require_json_error(post(port, target, ""), 400);
  require_json_error(post(port, "/api/applications/99/parameters", R"({"name":"output","value":"x"})"), 404);
  require_json_error(post(port, "/api/applications/one/parameters", R"({"name":"output","value":"x"})"), 400);

  REQUIRE(post(port, "/api/applications/1/transition", command_body("configure")).status == 200);
  const HttpAnswer not_halted = post(port, target, R"({"name":"events_per_second","value":"5"})");
  require_json_error(not_halted, 409);
  CHECK(parse_json(not_halted.body)["error"].string.find("only while Halted") != std::string::npos);
  CHECK(parse_json(get(port, "/api/applications/1").body)["parameters"][0]["value"].string == "300");
}
