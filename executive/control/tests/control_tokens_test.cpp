// Access to the control server: the bearer token, checked once for every request before any route.
#include <catch2/catch.hpp>

#include <chrono>
#include <cstdint>
#include <string>

#include "daqx/control/control_client.hpp"
#include "../../../tests/support/exposition_check.hpp"
#include "../../../tests/support/fake_control_model.hpp"
#include "../../../tests/support/http_exchange.hpp"

using daqx::State;
using namespace daqx::test;

namespace {

constexpr const char* kToken = "Zm9vYmFy-token_0123456789";

// Changes need kToken; reads too when asked.
daqx::ControlServerSecurity token_security(bool reads_need_token = false) {
  return daqx::ControlServerSecurity{kToken, reads_need_token, "", ""};
}

// A request with the given Authorization header line (none when empty).
HttpAnswer with_authorization(std::uint16_t port, const std::string& method, const std::string& target,
                              const std::string& authorization, const std::string& body = "") {
  std::string text = method + " " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n";
  if (!authorization.empty()) text += "Authorization: " + authorization + "\r\n";
  text += "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
  return round_trip(port, text);
}

// daqx_control_refused_total{reason=...} on /metrics; -1 when the series is not there.
double refused_count(std::uint16_t port, const std::string& reason) {
  const ExpositionCheck metrics = check_exposition(get(port, "/metrics").body);
  const Sample* refused = metrics.find("daqx_control_refused_total", {{"reason", reason}});
  return refused == nullptr ? -1 : refused->value;
}

}  // namespace

TEST_CASE("a change without a token is refused with 401 and a Bearer challenge, and changes nothing", "[http][access]") {
  ServedControlModel served(token_security());
  const HttpAnswer answer = with_authorization(served.port(), "POST", "/api/transition", "", command_body("configure"));
  require_json_error(answer, 401);
  CHECK(answer.header("www-authenticate") == "Bearer realm=\"daqx\"");
  CHECK(served.model.state_of(1) == State::halted);
  // Every kind of change, and methods no route takes, are refused before routing.
  CHECK(with_authorization(served.port(), "POST", "/api/applications/1/parameters", "", R"({"name":"output","value":"x"})").status == 401);
  CHECK(with_authorization(served.port(), "POST", "/api/connect?timeout=0", "").status == 401);
  CHECK(with_authorization(served.port(), "DELETE", "/api/applications/1", "").status == 401);
  CHECK(with_authorization(served.port(), "PUT", "/no/such/page", "").status == 401);
  CHECK(served.model.connect_requests == 0);
}

TEST_CASE("a change with a wrong token is refused with 403", "[http][access]") {
  ServedControlModel served(token_security());
  const std::string token(kToken);
  for (const std::string& wrong : {std::string("nope"), token.substr(0, token.size() - 1), token + "x",
                                   token.substr(0, token.size() - 1) + "Y"}) {
    INFO("token " << wrong);
    require_json_error(with_authorization(served.port(), "POST", "/api/transition", "Bearer " + wrong,
                                          command_body("configure")), 403);
  }
  CHECK(served.model.state_of(1) == State::halted);
}

TEST_CASE("a change with the token is done, and the scheme may be in any case", "[http][access]") {
  ServedControlModel served(token_security());
  const HttpAnswer answer = with_authorization(served.port(), "POST", "/api/transition", std::string("Bearer ") + kToken,
                                               command_body("configure"));
  INFO(answer.body);
  REQUIRE(answer.status == 200);
  CHECK(served.model.state_of(1) == State::configured);
  CHECK(with_authorization(served.port(), "POST", "/api/transition", std::string("bearer   ") + kToken,
                           command_body("halt")).status == 200);
  CHECK(served.model.state_of(1) == State::halted);
}

TEST_CASE("an Authorization header that is not a bearer token counts as none: 401", "[http][access]") {
  ServedControlModel served(token_security());
  for (const std::string& garbled : {std::string("Basic dXNlcjpwYXNz"), std::string("Bearer"), std::string("Bearer "),
                                     std::string(kToken), std::string("Bearer\t")}) {
    INFO("Authorization: " << garbled);
    CHECK(with_authorization(served.port(), "POST", "/api/transition", garbled, command_body("configure")).status == 401);
  }
}

TEST_CASE("reads are open by default when changes need a token, and the pages say that changes need it", "[http][access]") {
  ServedControlModel served(token_security());
  CHECK(get(served.port(), "/api/applications").status == 200);
  CHECK(get(served.port(), "/metrics").status == 200);
  const HttpAnswer page = get(served.port(), "/app/1");
  REQUIRE(page.status == 200);
  CHECK(page.body.find("Changes need the partition's bearer token") != std::string::npos);
  CHECK(page.body.find("id=\"token\"") != std::string::npos);
  CHECK(page.body.find("Authorization") != std::string::npos);
  CHECK(get(served.port(), "/").body.find("Changes need the partition's bearer token") != std::string::npos);
  // An open executive says nothing of tokens.
  ServedControlModel open;
  CHECK(get(open.port(), "/app/1").body.find("bearer token") == std::string::npos);
}

TEST_CASE("with reads closed, a read needs the token too", "[http][access]") {
  ServedControlModel served(token_security(/*reads_need_token=*/true));
  require_json_error(get(served.port(), "/api/applications"), 401);
  CHECK(get(served.port(), "/").status == 401);
  CHECK(with_authorization(served.port(), "GET", "/api/applications", "Bearer wrong").status == 403);
  CHECK(with_authorization(served.port(), "GET", "/api/applications", std::string("Bearer ") + kToken).status == 200);
  CHECK(with_authorization(served.port(), "HEAD", "/metrics", std::string("Bearer ") + kToken).status == 200);
}

TEST_CASE("refused requests are counted by reason on /metrics", "[http][access]") {
  ServedControlModel served(token_security());
  CHECK(refused_count(served.port(), "no_token") == 0);
  with_authorization(served.port(), "POST", "/api/transition", "", command_body("configure"));
  with_authorization(served.port(), "POST", "/api/transition", "", command_body("configure"));
  with_authorization(served.port(), "POST", "/api/transition", "Bearer wrong", command_body("configure"));
  CHECK(refused_count(served.port(), "no_token") == 2);
  CHECK(refused_count(served.port(), "bad_token") == 1);
  CHECK(refused_count(served.port(), "tls") == 0);
}

TEST_CASE("ControlClient presents its token, and the default access applies to clients made after it is set", "[http][access]") {
  ServedControlModel served(token_security());
  const std::string url = "http://127.0.0.1:" + std::to_string(served.port());
  CHECK(daqx::ControlClient(url).post("/api/transition", command_body("configure")).status == 401);
  CHECK(daqx::ControlClient(url, std::chrono::seconds(10), {"wrong", ""}).post("/api/transition", command_body("configure")).status == 403);
  const daqx::ControlAccess before = daqx::default_control_access();
  daqx::set_default_control_access({kToken, ""});
  const daqx::HttpReply reply = daqx::ControlClient(url).post("/api/transition", command_body("configure"));
  daqx::set_default_control_access(before);
  CHECK(reply.status == 200);
  CHECK(served.model.state_of(1) == State::configured);
}
