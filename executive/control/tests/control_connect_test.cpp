// POST /api/connect: waiting for the outgoing connections without holding a request thread, and its end when
// the executive stops.
#include <catch2/catch.hpp>

#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "../../../tests/support/exposition_check.hpp"
#include "../../../tests/support/fake_control_model.hpp"
#include "../../../tests/support/http_exchange.hpp"
#include "../../../tests/support/json_reader.hpp"
#include "../../../tests/support/raw_client.hpp"
#include "../../../tests/support/wait_until.hpp"

using namespace daqx::test;

TEST_CASE("POST /api/connect asks the transports to open their connections and waits for the outgoing ones: 504 "
          "naming those still down when its timeout passes, 200 once all are up", "[http]") {
  ServedControlModel served;
  const std::uint16_t port = served.port();
  // One of the two outgoing connections stays down (the accepted one does not count).
  const auto started = std::chrono::steady_clock::now();
  const HttpAnswer timed_out = post(served.port(), "/api/connect?timeout=600", "");
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  INFO(timed_out.body);
  REQUIRE(timed_out.status == 504);
  CHECK(timed_out.header("content-type") == "application/json");
  const Json result = parse_json(timed_out.body);
  CHECK(result["up"].number == 1);
  CHECK(result["total"].number == 2);
  CHECK(result["seconds"].number >= 0.6);
  CHECK(waited < 5);
  REQUIRE(result["down"].size() == 1);
  CHECK(result["down"][0]["protocol"].string == "tcp");
  CHECK(result["down"][0]["peer"].number == 2);
  CHECK(result["down"][0]["remote"].string == "10.0.0.3:40000");
  // Asked at once, and again while it waited (every 250 ms): a peer that was not listening gets another try.
  CHECK(served.model.connect_requests >= 2);

  // Once asked, it comes up: 200 at once, nothing down. The default timeout needs no query.
  served.model.down_connection_comes_up = true;
  const HttpAnswer all_up = post(port, "/api/connect", "");
  INFO(all_up.body);
  REQUIRE(all_up.status == 200);
  const Json up = parse_json(all_up.body);
  CHECK(up["up"].number == 2);
  CHECK(up["total"].number == 2);
  CHECK(up["down"].size() == 0);
  CHECK(up["seconds"].number < 5);

  // The query's number by the strict syntax: decoded escapes included (a NUL, blanks, a '+') and nothing cut short.
  for (const char* bad : {"soon", "-1", "120001", "", "1.5", "5%00x", "5%00", "%205", "5%20", "5%0D", "5%0A", "%2B5",
                          "0x10", "1e3", "99999999999999999999"})
    require_json_error(post(port, std::string("/api/connect?timeout=") + bad, ""), 400);
  CHECK_THAT(post(port, "/api/connect?timeout=5%00x", "").body,
             Catch::Contains("timeout (milliseconds, 0 to 120000): '5\\\\x00x' is not an unsigned integer: it holds a NUL byte"));
  CHECK_THAT(post(port, "/api/connect?timeout=120001", "").body,
             Catch::Contains("'120001' is out of range for an unsigned integer: above the maximum 120000"));
  const HttpAnswer wrong_method = get(port, "/api/connect");
  require_json_error(wrong_method, 405);
  CHECK(wrong_method.header("allow") == "POST");
}

TEST_CASE("connect waits leave the request threads: a server of 2 threads parks 32 of them and still answers reads at "
          "once, a 33rd is 503 busy, and each is answered when its connections come up, half-closed clients too",
          "[http]") {
  ServedControlModel served;  // 2 threads
  const std::uint16_t port = served.port();
  constexpr int kWaits = 32;  // kMaxConnectWaits
  std::vector<std::unique_ptr<RawClient>> waits;
  for (int i = 0; i < kWaits; ++i) {
    waits.push_back(std::make_unique<RawClient>(port));
    waits.back()->send("POST /api/connect?timeout=20000 HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\n\r\n");
    if (i % 2 == 0) waits.back()->finish_sending();  // a client may half-close after its request
  }
  // Until the server has taken in all 32 (its gauge says so), however busy the machine: a wait parked in time
  // would otherwise be refused as the 33rd. Had they kept their threads, 30 would be queued behind 2 and the
  // gauge would stay at 2 until those timed out.
  REQUIRE(wait_until([&] { return exposed_value(port, "daqx_control_connect_waits") == kWaits; },
                     std::chrono::seconds(15)));
  const auto asked = std::chrono::steady_clock::now();
  const HttpAnswer extra = post(port, "/api/connect?timeout=20000", "");
  require_json_error(extra, 503);
  CHECK(parse_json(extra.body)["error"].string.find("busy: 32 connect waits") != std::string::npos);
  CHECK(still_answers(port));
  CHECK(get(port, "/api/transports").status == 200);
  // Not behind the waits' 20 s: a bound far below it and far above a busy machine's delays.
  CHECK(std::chrono::steady_clock::now() - asked < std::chrono::seconds(10));

  served.model.down_connection_comes_up = true;  // the next ask (every 250 ms per wait) brings it up
  for (auto& wait : waits) {
    const HttpAnswer answer = receive_answer(*wait);
    INFO(answer.body);
    REQUIRE(answer.status == 200);
    CHECK(parse_json(answer.body)["up"].number == 2);
  }
  // Every place is free again.
  CHECK(post(port, "/api/connect?timeout=1000", "").status == 200);
}

TEST_CASE("when the executive begins to stop, a connect wait in progress ends 503 and new ones are refused, even "
          "though its transports, torn down, list no connection: never read as all up", "[http]") {
  ServedControlModel served;
  const std::uint16_t port = served.port();
  auto waiting = std::async(std::launch::async, [port] { return post(port, "/api/connect?timeout=20000", ""); });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the wait is under way: one connection is down
  REQUIRE(waiting.wait_for(std::chrono::milliseconds(0)) == std::future_status::timeout);
  // main's order at SIGTERM: the server is told first, then the executive tears its transports down.
  served.server.begin_stop();
  served.model.transports_gone = true;
  REQUIRE(waiting.wait_for(std::chrono::seconds(3)) == std::future_status::ready);
  const HttpAnswer ended = waiting.get();
  require_json_error(ended, 503);
  CHECK(parse_json(ended.body)["error"].string.find("stopping") != std::string::npos);
  const HttpAnswer refused = post(port, "/api/connect?timeout=0", "");
  require_json_error(refused, 503);
  CHECK(still_answers(port));  // other requests are served until stop()
  served.server.begin_stop();  // idempotent
  served.server.stop();
}
