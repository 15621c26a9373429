// The control server's HTML pages: the status page and an application's page, everything from the model escaped.
#include <catch2/catch.hpp>

#include <string>

#include "../../../tests/support/fake_control_model.hpp"
#include "../../../tests/support/http_exchange.hpp"

using namespace daqx::test;

TEST_CASE("the status page shows partition, context, applications, pools, connections, threads and counters",
          "[http]") {
  ServedControlModel served;
  const HttpAnswer page = get(served.port(), "/");
  REQUIRE(page.status == 200);
  REQUIRE(page.header("content-type") == "text/html; charset=utf-8");
  const std::string& html = page.body;
  CHECK(html.find("<noscript><meta http-equiv=\"refresh\" content=\"5\"></noscript>") != std::string::npos);
  CHECK(html.find("<main id=\"live\"") != std::string::npos);  // redrawn in place by its script
  CHECK(html.find("two-by-two &lt;test&gt;") != std::string::npos);
  CHECK(html.find("http://127.0.0.1:9001") != std::string::npos);
  for (const char* link : {"href=\"/app/1\"", "href=\"/app/2\"", "href=\"/app/3\"", "href=\"/app/4\""}) {
    CHECK(html.find(link) != std::string::npos);
  }
  CHECK(html.find("evb::RU") != std::string::npos);
  CHECK(html.find("test::Fragile&lt;&amp;&gt;") != std::string::npos);
  CHECK(html.find("evb/ru/0/pool") != std::string::npos);
  CHECK(html.find("numa:0") != std::string::npos);
  CHECK(html.find("65536") != std::string::npos);
  CHECK(html.find("10.0.0.2:40000") != std::string::npos);
  CHECK(html.find("10.0.0.3:40000") != std::string::npos);
  CHECK(html.find("class=\"down\"") != std::string::npos);
  CHECK(html.find("pt/tcp/recv-0") != std::string::npos);
  CHECK(html.find("0,1,2,3") != std::string::npos);
  CHECK(html.find("frames_dispatched") != std::string::npos);
  CHECK(html.find("1000000") != std::string::npos);
  // Nothing from the model reaches the page unescaped.
  CHECK(html.find("<test>") == std::string::npos);
  CHECK(html.find("Fragile<&>") == std::string::npos);
}

TEST_CASE("an application page shows state, reason, parameters, metrics and the command buttons", "[http]") {
  ServedControlModel served;
  REQUIRE(post(served.port(), "/api/applications/4/parameters", R"({"name":"fail_on_enable","value":"true"})")
              .status == 200);
  REQUIRE(post(served.port(), "/api/applications/4/transition", command_body("configure")).status == 200);
  REQUIRE(post(served.port(), "/api/applications/4/transition", command_body("enable")).status == 422);

  const HttpAnswer page = get(served.port(), "/app/4");
  REQUIRE(page.status == 200);
  REQUIRE(page.header("content-type") == "text/html; charset=utf-8");
  const std::string& html = page.body;
  CHECK(html.find("state-Failed") != std::string::npos);
  CHECK(html.find("enable hook threw: &lt;disk&gt; &amp; &quot;full&quot;") != std::string::npos);
  CHECK(html.find("<disk>") == std::string::npos);
  for (const char* text : {"events_per_second", "unsigned", "Hz", "how many events to generate", "fail_on_enable",
                           "where events go &lt;not&gt; &quot;anywhere&quot;", "frames_received", "queue depth.now"}) {
    INFO(text);
    CHECK(html.find(text) != std::string::npos);
  }
  for (const char* command : {"configure", "enable", "stop", "halt"}) {
    CHECK(html.find("{command: '" + std::string(command) + "'}") != std::string::npos);
  }
  CHECK(html.find("/api/applications/4/transition") != std::string::npos);
  CHECK(html.find("/api/applications/4/parameters") != std::string::npos);
}

TEST_CASE("an application page of an unknown tid is a 404 page, of a non-numeric one a 400 page", "[http]") {
  ServedControlModel served;
  const HttpAnswer unknown = get(served.port(), "/app/99");
  REQUIRE(unknown.status == 404);
  REQUIRE(unknown.header("content-type") == "text/html; charset=utf-8");
  CHECK(unknown.body.find("no application with tid 99") != std::string::npos);
  const HttpAnswer not_numeric = get(served.port(), "/app/<b>");
  REQUIRE(not_numeric.status == 400);
  CHECK(not_numeric.body.find("&lt;b&gt;") != std::string::npos);
  CHECK(not_numeric.body.find("<b>") == std::string::npos);
}
