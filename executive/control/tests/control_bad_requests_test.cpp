// What the control server does with bad requests: malformed targets and bodies, huge bodies, stalled clients and
// a model that throws, answered with a reason while the server keeps answering others.
#include <catch2/catch.hpp>

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "daqx/services/text.hpp"
#include "../../../tests/support/fake_control_model.hpp"
#include "../../../tests/support/http_exchange.hpp"
#include "../../../tests/support/json_reader.hpp"
#include "../../../tests/support/raw_client.hpp"

using namespace daqx::test;

TEST_CASE("a malformed escape anywhere in the target is a 400 with a JSON reason, never a 500", "[http]") {
  ServedControlModel served;
  for (const char* target : {"/api/connect?%timeout=5", "/api/connect?timeout=%zz", "/api/pools?%", "/api/%zz"}) {
    INFO(target);
    const HttpAnswer answer = target == std::string("/api/pools?%") ? get(served.port(), target)
                                                                     : post(served.port(), target, "");
    require_json_error(answer, 400);
    CHECK_THAT(answer.body, Catch::Contains("bad request target"));
  }
  REQUIRE(still_answers(served.port()));
}

TEST_CASE("bytes a client sent are escaped in every error answer, which stays valid UTF-8", "[http]") {
  ServedControlModel served;
  const HttpAnswer page = get(served.port(), "/%F7%0A");
  REQUIRE(page.status == 404);
  CHECK(daqx::strings::valid_utf8(page.body) == page.body);
  CHECK_THAT(page.body, Catch::Contains("/\\xf7\\n"));
  const HttpAnswer api = get(served.port(), "/api/%FF");
  require_json_error(api, 404);
  CHECK(daqx::strings::valid_utf8(api.body) == api.body);
  CHECK_THAT(api.body, Catch::Contains("/api/\\\\xff"));  // JSON writes the backslash escaped
}

TEST_CASE("a huge body is refused with 413 and the server keeps answering", "[http]") {
  ServedControlModel served;
  const std::uint16_t port = served.port();
  const std::string ten_megabytes(10u << 20, 'x');
  const HttpAnswer huge = post(port, "/api/transition", ten_megabytes);
  require_json_error(huge, 413);

  // Announced but never sent: refused from the header alone.
  const HttpAnswer announced = round_trip(
      port, "POST /api/transition HTTP/1.1\r\nHost: x\r\nContent-Length: 10000000000\r\nConnection: close\r\n\r\n");
  CHECK((announced.status == 413 || announced.status == 0));

  // Chunked, so the size shows only while reading.
  std::string chunked = "POST /api/applications/1/parameters HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
                        "Connection: close\r\n\r\n";
  const std::string chunk(1u << 16, 'y');
  for (int i = 0; i < 40; ++i) chunked += "10000\r\n" + chunk + "\r\n";
  chunked += "0\r\n\r\n";
  require_json_error(round_trip(port, chunked), 413);

  // A small chunked body is read like any other.
  const std::string body = R"({"name":"output","value":"/tmp/x"})";
  char size[16];
  std::snprintf(size, sizeof size, "%zx", body.size());
  const HttpAnswer small = round_trip(port, "POST /api/applications/1/parameters HTTP/1.1\r\nHost: x\r\n"
                                          "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n" +
                                              std::string(size) + "\r\n" + body + "\r\n0\r\n\r\n");
  CHECK(small.status == 200);
  REQUIRE(still_answers(port));
}

TEST_CASE("malformed requests and stalled clients do not stop the server", "[http]") {
  ServedControlModel served;
  const std::uint16_t port = served.port();
  CHECK(round_trip(port, "HELLO\r\n\r\n").status != 200);
  CHECK(round_trip(port, "GET\r\n\r\n").status != 200);
  CHECK(round_trip(port, "GET / HTTP/1.1\r\nHost: x\r\nBroken header line\r\n\r\n").status != 0);
  CHECK(round_trip(port, "GET /" + std::string(100000, 'a') + " HTTP/1.1\r\n\r\n").status != 200);
  CHECK(round_trip(port, std::string("\0\1\2\3\r\n\r\n", 8)).status != 200);
  CHECK(round_trip(port, "GET http://[::1 HTTP/1.1\r\nHost: x\r\n\r\n").status >= 400);
  CHECK(round_trip(port, "GET * HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").status == 400);
  const std::string bad_length = "POST /api/transition HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: ";
  require_json_error(round_trip(port, bad_length + "-5\r\n\r\n{}"), 400);
  for (const char* length : {"abc", "99999999999999999999999"}) {
    INFO(length);
    require_json_error(round_trip(port, bad_length + length + "\r\n\r\n{}"), 400);
  }
  {
    // The client announces more than it sends, then stops sending.
    RawClient short_body(port);
    short_body.send("POST /api/transition HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{\"command\":");
    short_body.finish_sending();
    require_json_error(receive_answer(short_body), 400);
  }
  {
    // A connection that says nothing holds only its own thread: others are served meanwhile.
    RawClient silent(port);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    const auto started = std::chrono::steady_clock::now();
    REQUIRE(still_answers(port));
    CHECK(std::chrono::steady_clock::now() - started < std::chrono::seconds(2));
  }
  {
    // More stalled connections than server threads: each is dropped after the server's timeout, then others are
    // served again.
    std::vector<std::unique_ptr<RawClient>> stalled;
    for (int i = 0; i < 3; ++i) {
      stalled.push_back(std::make_unique<RawClient>(port));
      stalled.back()->send("GET /api/pools HTTP/1.1\r\nHost: x\r\n");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    const auto started = std::chrono::steady_clock::now();
    REQUIRE(still_answers(port));
    CHECK(std::chrono::steady_clock::now() - started < std::chrono::seconds(6));
  }
  { RawClient closed_at_once(port); }
  REQUIRE(still_answers(port));
}

TEST_CASE("an exception from the model answers 500 with its reason and the server keeps answering", "[http]") {
  ServedControlModel served;
  served.model.throw_from_pools = true;
  const HttpAnswer json = get(served.port(), "/api/pools");
  require_json_error(json, 500);
  CHECK(parse_json(json.body)["error"].string == "internal error: pool registry unavailable");
  const HttpAnswer page = get(served.port(), "/");
  CHECK(page.status == 500);
  CHECK(page.body.find("pool registry unavailable") != std::string::npos);
  CHECK(get(served.port(), "/metrics").status == 500);
  served.model.throw_from_pools = false;
  CHECK(get(served.port(), "/api/pools").status == 200);
  REQUIRE(still_answers(served.port()));
}
