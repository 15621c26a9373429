// The control server's routing: unknown paths, wrong methods, HEAD, query strings and trailing slashes.
#include <catch2/catch.hpp>

#include <string>

#include "../../../tests/support/fake_control_model.hpp"
#include "../../../tests/support/http_exchange.hpp"

using namespace daqx::test;

TEST_CASE("unknown paths answer 404: JSON under /api, a page elsewhere", "[http]") {
  ServedControlModel served;
  const std::uint16_t port = served.port();
  for (const char* target : {"/api", "/api/nothing", "/api/applications/1/nothing", "/api/applications/1/transition/x",
                             "/api/pools/1"}) {
    INFO(target);
    require_json_error(get(port, target), 404);
  }
  const HttpAnswer page = get(port, "/nothing/here");
  REQUIRE(page.status == 404);
  CHECK(page.header("content-type") == "text/html; charset=utf-8");
  REQUIRE(get(port, "/app").status == 404);
  REQUIRE(get(port, "/metrics/x").status == 404);
  REQUIRE(still_answers(port));
}

TEST_CASE("a wrong method on a known path answers 405 with an Allow header", "[http]") {
  ServedControlModel served;
  const std::uint16_t port = served.port();
  const HttpAnswer post_to_list = post(port, "/api/applications", "{}");
  require_json_error(post_to_list, 405);
  CHECK(post_to_list.header("allow") == "GET, HEAD");
  const HttpAnswer get_transition = get(port, "/api/transition");
  require_json_error(get_transition, 405);
  CHECK(get_transition.header("allow") == "POST");
  CHECK(request(port, "GET", "/api/applications/1/parameters").header("allow") == "POST");
  CHECK(request(port, "DELETE", "/api/applications/1").status == 405);
  const HttpAnswer put_page = request(port, "PUT", "/", std::string("x"));
  CHECK(put_page.status == 405);
  CHECK(put_page.header("allow") == "GET, HEAD");
  CHECK(request(port, "POST", "/metrics", std::string("x")).status == 405);
  CHECK(request(port, "OPTIONS", "/app/1").status == 405);
  REQUIRE(still_answers(port));
}

TEST_CASE("HEAD answers the headers of GET without a body", "[http]") {
  ServedControlModel served;
  const HttpAnswer head = request(served.port(), "HEAD", "/api/applications");
  REQUIRE(head.status == 200);
  CHECK(head.header("content-type") == "application/json");
  CHECK(head.body.empty());
  CHECK(std::stoul(head.header("content-length")) == get(served.port(), "/api/applications").body.size());
}

TEST_CASE("query strings and a trailing slash do not change the route", "[http]") {
  ServedControlModel served;
  CHECK(get(served.port(), "/api/pools/").status == 200);
  CHECK(get(served.port(), "/api/applications/2?verbose=1").status == 200);
  CHECK(get(served.port(), "/?refresh=no").status == 200);
  CHECK(get(served.port(), "/api/applications/%32").status == 200);  // percent-encoded "2"
}
