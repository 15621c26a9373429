// The control API's reads: applications, pools, threads, transports and the executive as JSON.
#include <catch2/catch.hpp>

#include <cstddef>
#include <string>

#include "../../../tests/support/fake_control_model.hpp"
#include "../../../tests/support/http_exchange.hpp"
#include "../../../tests/support/json_reader.hpp"

using namespace daqx::test;

TEST_CASE("GET /api/applications lists every application with its parameters and metrics", "[http]") {
  ServedControlModel served;
  const HttpAnswer answer = get(served.port(), "/api/applications");
  REQUIRE(answer.status == 200);
  REQUIRE(answer.header("content-type") == "application/json");
  const Json applications = parse_json(answer.body);
  REQUIRE(applications.is(Json::Type::array));
  REQUIRE(applications.size() == 4);
  for (std::size_t i = 0; i < applications.size(); ++i) {
    const Json& application = applications[i];
    CHECK(application["tid"].number == static_cast<double>(i + 1));
    CHECK(application["class"].is(Json::Type::string));
    CHECK(application["instance"].is(Json::Type::number));
    CHECK(application["name"].is(Json::Type::string));
    CHECK(application["state"].string == "Halted");
    CHECK(application["reason"].is(Json::Type::string));
    const Json& parameters = application["parameters"];
    REQUIRE(parameters.size() == 3);
    for (const char* key : {"name", "type", "value", "default", "unit", "help"}) {
      CHECK(parameters[0][key].is(Json::Type::string));
    }
    const Json& metrics = application["metrics"];
    REQUIRE(metrics.size() == 6);
    for (std::size_t m = 0; m < metrics.size(); ++m) {
      CHECK(metrics[m]["name"].is(Json::Type::string));
      CHECK((metrics[m]["kind"].string == "counter" || metrics[m]["kind"].string == "gauge" ||
             metrics[m]["kind"].string == "histogram" || metrics[m]["kind"].string == "state_set"));
      CHECK(metrics[m]["exported"].is(Json::Type::boolean));
      CHECK(metrics[m]["value"].is(Json::Type::number));
      CHECK(metrics[m]["help"].is(Json::Type::string));
      CHECK(metrics[m]["labels"].is(Json::Type::object));
    }
  }
  CHECK(applications[1]["class"].string == "evb::RU");
  CHECK(applications[3]["class"].string == "test::Fragile<&>");
  CHECK(applications[3]["instance"].number == 1);
  CHECK(applications[0]["parameters"][1]["help"].string == "where events go <not> \"anywhere\"");
  CHECK(applications[0]["metrics"][1]["help"].string == "Frames waiting\nin the queue");
  CHECK(applications[0]["metrics"][2]["labels"]["peer"].string == "host \"a\"\\b\nc");
}

TEST_CASE("GET /api/applications/<tid> answers one application, 404 when unknown, 400 when not a number", "[http]") {
  ServedControlModel served;
  const HttpAnswer one = get(served.port(), "/api/applications/3");
  REQUIRE(one.status == 200);
  const Json application = parse_json(one.body);
  CHECK(application["tid"].number == 3);
  CHECK(application["class"].string == "evb::BU");
  CHECK(application["state"].string == "Halted");

  require_json_error(get(served.port(), "/api/applications/99"), 404);
  require_json_error(get(served.port(), "/api/applications/0"), 404);
  require_json_error(get(served.port(), "/api/applications/abc"), 400);
  require_json_error(get(served.port(), "/api/applications/-1"), 400);
  require_json_error(get(served.port(), "/api/applications/4294967296"), 400);
  require_json_error(get(served.port(), "/api/applications/99999999999999999999999"), 400);
  CHECK(parse_json(get(served.port(), "/api/applications/abc").body)["error"].string ==
        "not an application id: 'abc'");
  REQUIRE(still_answers(served.port()));
}

TEST_CASE("pools, threads, transports and the executive are served as JSON", "[http]") {
  ServedControlModel served;
  const std::uint16_t port = served.port();

  const HttpAnswer pools_answer = get(port, "/api/pools");
  REQUIRE(pools_answer.status == 200);
  const Json pools = parse_json(pools_answer.body);
  REQUIRE(pools.size() == 1);
  CHECK(pools[0]["name"].string == "evb/ru/0/pool");
  CHECK(pools[0]["allocator"].string == "numa:0");
  CHECK(pools[0]["numa_node"].number == 0);
  CHECK(pools[0]["bytes_reserved"].number == 1 << 20);
  REQUIRE(pools[0]["classes"].size() == 2);
  const Json& large = pools[0]["classes"][1];
  CHECK(large["block_size"].number == 65536);
  CHECK(large["blocks_total"].number == 16);
  CHECK(large["blocks_used"].number == 16);
  CHECK(large["blocks_free"].number == 0);
  CHECK(large["high_water"].number == 16);
  CHECK(large["failed_allocations"].number == 7);
  REQUIRE(pools[0]["chunks"].size() == 1);
  CHECK(pools[0]["chunks"][0]["address"].number == static_cast<double>(0x7f0000001000u));
  CHECK(pools[0]["chunks"][0]["bytes"].number == 1 << 20);

  const Json threads = parse_json(get(port, "/api/threads").body);
  REQUIRE(threads.size() == 2);
  CHECK(threads[1]["name"].string == "evb/ru/0/work");
  CHECK(threads[1]["kernel_tid"].number == 1235);
  CHECK(threads[1]["cores_wanted"].size() == 1);
  CHECK(threads[1]["cores"].size() == 4);

  const Json transports = parse_json(get(port, "/api/transports").body);
  REQUIRE(transports.size() == 1);
  CHECK(transports[0]["protocol"].string == "tcp");
  CHECK(transports[0]["endpoint"].string == "tcp://127.0.0.1:40000");
  CHECK(transports[0]["parameters"][0]["name"].string == "mode");
  CHECK(transports[0]["metrics"][0]["value"].number == 42);
  REQUIRE(transports[0]["connections"].size() == 3);
  CHECK(transports[0]["connections"][0]["remote"].string == "10.0.0.2:40000");
  CHECK(transports[0]["connections"][0]["up"].boolean == true);
  CHECK(transports[0]["connections"][0]["outgoing"].boolean == true);
  CHECK(transports[0]["connections"][1]["up"].boolean == false);
  CHECK(transports[0]["connections"][2]["outgoing"].boolean == false);
  CHECK(transports[0]["connections"][0]["metrics"][1]["value"].number == 4e9);

  const Json executive = parse_json(get(port, "/api/executive").body);
  CHECK(executive["partition"].string == "two-by-two <test>");
  CHECK(executive["context"].string == "http://127.0.0.1:9001");
  REQUIRE(executive["metrics"].size() == 3);
  CHECK(executive["metrics"][0]["value"].number == 1e6);
  CHECK(executive["metrics"][2]["value"].is(Json::Type::null));  // NaN has no JSON spelling
}
