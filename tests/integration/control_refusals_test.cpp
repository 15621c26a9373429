// Process-level tests of how the control port refuses: every refusal a 4xx with a one-line reason (5xx only for
// daqx's own faults), an application's refusal 422 with its reason, requests past the limits answered 414 and 431
// and then closed, and a request cut off before its end refused, never executed.
#include <catch2/catch.hpp>

#include <Poco/JSON/Object.h>

#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "../support/probe_context.hpp"
#include "../support/raw_client.hpp"

using namespace daqx::test;
using Catch::Contains;

namespace {

// Sends `bytes`, says it is all, and reads the answer (until the server closes).
std::string ask(std::uint16_t port, const std::string& bytes) {
  RawClient client(port);
  if (!client.connected()) return {};
  client.send(bytes);
  client.finish_sending();
  return client.read_all(std::chrono::seconds(15));
}

// Sends `bytes` without saying it is all (a client that keeps its side open) and reads the answer.
std::string ask_keeping_open(std::uint16_t port, const std::string& bytes) {
  RawClient client(port);
  if (!client.connected()) return {};
  client.send(bytes);
  return client.read_all(std::chrono::seconds(15));
}

// A refusal as the issue asks for it: `status`, a JSON reason of one printable line.
void require_refusal(const std::string& answer, int status, const std::string& reason_part) {
  INFO(answer.substr(0, 400));
  REQUIRE(status_of(answer) == status);
  CHECK_THAT(answer, Contains("Content-Type: application/json"));
  const std::string reason = json_error_of(body_of(answer));
  CHECK_THAT(reason, Contains(reason_part));
  for (char c : reason) CHECK(static_cast<unsigned char>(c) >= 0x20);
}

std::string state(const ExecutiveProcess& executive, std::uint32_t tid) {
  return executive.application(tid)->getValue<std::string>("state");
}

const std::string kConfigureBody = R"({"command":"configure"})";

std::string configure_request(const std::string& extra_fields = "") {
  return "POST /api/transition HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n" + extra_fields +
         "Content-Length: " + std::to_string(kConfigureBody.size()) + "\r\n\r\n" + kConfigureBody;
}

}  // namespace

TEST_CASE("a configure an application refuses is answered 422 with the application's reason as one printable line",
          "[executive][process][refusals][control]") {
  ProbeContext probe("refused-configure", {{"failIn", "configure", ""}});
  ExecutiveProcess& executive = probe.executive;
  // A reason with a line break, a control character and a carriage return (a partition could not hold them).
  REQUIRE(executive.post("/api/applications/1/parameters",
                         R"({"name":"failReason","value":"disk\nfull\u0001 on /data\r"})").status == 200);

  const daqx::HttpReply whole = executive.transition("configure");
  CHECK(whole.status == 422);
  CHECK_THAT(whole.body, Contains("configure failed: disk\\\\nfull\\\\x01 on /data\\\\r"));
  CHECK(state(executive, 1) == "Failed");
  CHECK_THAT(executive.application(1)->getValue<std::string>("reason"), Contains("disk\\nfull\\x01 on /data\\r"));

  // The same through one application, and an illegal transition stays 409.
  CHECK(executive.transition(1, "halt").status == 200);
  CHECK(executive.transition(1, "configure").status == 422);
  CHECK(executive.transition(1, "enable").status == 409);
  CHECK(executive.transition(1, "halt").status == 200);
  CHECK(executive.stop() == 0);
}

TEST_CASE("a request line past 8 KiB is answered 414 and closed, whatever its length, and one within is served",
          "[executive][process][refusals][control]") {
  ProbeContext probe("long-line");
  for (std::size_t length : {std::size_t{8300}, std::size_t{40000}, std::size_t{200000}}) {
    INFO("target of " << length << " bytes");
    const std::string request = "GET /api/" + std::string(length, 'a') + " HTTP/1.1\r\nHost: x\r\n\r\n";
    require_refusal(ask(probe.port, request), 414, "request line longer than 8192 bytes");
    // A client that keeps sending and never half-closes still gets its answer, then the close.
    require_refusal(ask_keeping_open(probe.port, request), 414, "request line longer than 8192 bytes");
  }
  // Long, within the limit: routed (404, quoting the path cut short).
  const std::string answer = ask(probe.port, "GET /api/" + std::string(8000, 'a') + " HTTP/1.1\r\nHost: x\r\n\r\n");
  require_refusal(answer, 404, "no such page: '/api/aaaa");
  CHECK(json_error_of(body_of(answer)).size() < 400);
  CHECK(probe.executive.get("/api/applications").status == 200);
  CHECK(probe.executive.stop() == 0);
}

TEST_CASE("header fields past 16 KiB or more than 64 of them are answered 431 and closed, and within them served",
          "[executive][process][refusals][control]") {
  ProbeContext probe("long-header");
  std::string many = "GET /api/applications HTTP/1.1\r\nHost: x\r\n";
  for (int i = 0; i < 200; ++i) many += "X-Field-" + std::to_string(i) + ": v\r\n";
  const std::vector<std::string> refused = {
      "GET /api/applications HTTP/1.1\r\nX-Long: " + std::string(20000, 'v') + "\r\n\r\n",   // one long field
      "GET /api/applications HTTP/1.1\r\nX-Long: " + std::string(60000, 'v') + "\r\n\r\n",   // tens of kB
      "GET /api/applications HTTP/1.1\r\nX-Long: " + std::string(60000, 'v'),                // and never ended
      many + "\r\n",                                                                          // 200 fields
  };
  for (const std::string& request : refused) {
    INFO(request.substr(0, 60));
    require_refusal(ask(probe.port, request), 431, "request header fields larger than 16384 bytes");
    require_refusal(ask_keeping_open(probe.port, request), 431, "request header fields larger than 16384 bytes");
  }
  std::string within = "GET /api/applications HTTP/1.1\r\nHost: x\r\n";
  for (int i = 0; i < 60; ++i) within += "X-Field-" + std::to_string(i) + ": " + std::string(200, 'v') + "\r\n";
  CHECK(status_of(ask(probe.port, within + "\r\n")) == 200);
  CHECK(probe.executive.stop() == 0);
}

TEST_CASE("a request cut off inside its head or body is refused 400 and never executed",
          "[executive][process][refusals][control]") {
  ProbeContext probe("cut-off");
  ExecutiveProcess& executive = probe.executive;
  const std::string whole = configure_request();
  const std::size_t head_end = whole.find("\r\n\r\n");
  const std::vector<std::pair<std::string, std::string>> cut = {
      {whole.substr(0, 10), "request cut off inside its request line"},
      {whole.substr(0, whole.find("Content-Type") + 8), "request cut off inside its header fields"},  // mid-line
      {whole.substr(0, head_end), "request cut off inside its header fields"},      // last line without its CRLF
      {whole.substr(0, head_end + 2), "request cut off inside its header fields"},  // no blank line
      {whole.substr(0, whole.size() - 5), "request body cut off before its end"},
      {"POST /api/transition HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n17\r\n" + kConfigureBody.substr(0, 10),
       "request body cut off before its end"},
  };
  for (const auto& [bytes, reason] : cut) {
    INFO(bytes);
    require_refusal(ask(probe.port, bytes), 400, reason);
    CHECK(state(executive, 1) == "Halted");
  }
  // The whole request, sent the same way, is done.
  CHECK(status_of(ask(probe.port, whole)) == 200);
  CHECK(state(executive, 1) == "Configured");
  CHECK(executive.transition("halt").status == 200);
  CHECK(executive.stop() == 0);
}

TEST_CASE("a client that asks for 100 Continue gets it before sending its body, and then its answer",
          "[executive][process][refusals][control]") {
  ProbeContext probe("continue");
  RawClient client(probe.port);
  REQUIRE(client.connected());
  const std::string whole = configure_request("Expect: 100-continue\r\n");
  const std::size_t body_at = whole.find("\r\n\r\n") + 4;
  client.send(whole.substr(0, body_at));
  CHECK(client.read_until("\r\n\r\n", std::chrono::seconds(10)).starts_with("HTTP/1.1 100 Continue\r\n\r\n"));
  client.send(whole.substr(body_at));
  CHECK(status_of(client.read_all(std::chrono::seconds(10))) == 200);
  CHECK(state(probe.executive, 1) == "Configured");
  CHECK(probe.executive.transition("halt").status == 200);
  CHECK(probe.executive.stop() == 0);
}

TEST_CASE("every refusal of the control port is a 4xx with a one-line JSON reason", "[executive][process][refusals][control]") {
  ProbeContext probe("refusals");
  const auto post = [](const std::string& target, const std::string& body, const std::string& fields = "") {
    return "POST " + target + " HTTP/1.1\r\nHost: x\r\n" + fields + "Content-Length: " + std::to_string(body.size()) +
           "\r\n\r\n" + body;
  };
  const struct {
    std::string request;
    int status;
    std::string reason;
  } cases[] = {
      {"GET /api/nothing HTTP/1.1\r\nHost: x\r\n\r\n", 404, "no such page"},
      {"GET /api/applications/99 HTTP/1.1\r\nHost: x\r\n\r\n", 404, "no application"},
      {"DELETE /api/applications HTTP/1.1\r\nHost: x\r\n\r\n", 405, "not allowed here"},
      {post("/api/transition", "{not json"), 400, ""},
      {post("/api/transition", R"({"command":"dance"})"), 400, "dance"},
      {post("/api/applications/x\x01y/transition", kConfigureBody), 400, "not an application id: 'x\\x01y'"},
      {"POST /api/transition HTTP/1.1\r\nHost: x\r\nContent-Length: 2000000\r\n\r\n{}", 413, "larger than"},
      {post("/api/transition", kConfigureBody, "Transfer-Encoding: gzip\r\n"), 400, "ambiguous"},
      {"POST /api/transition HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n", 400, "not supported"},
      {"POST /api/transition HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", 400, "malformed chunked body"},
      {"POST /api/transition HTTP/1.1\r\nHost: x\r\nContent-Length: x\x7f\r\n\r\n", 400, "bad Content-Length: 'x\\x7f'"},
      {"\r\n\r\n", 400, "empty request line"},
  };
  for (const auto& c : cases) {
    INFO(c.request.substr(0, 80));
    require_refusal(ask(probe.port, c.request), c.status, c.reason);
  }
  CHECK(state(probe.executive, 1) == "Halted");
  CHECK(probe.executive.stop() == 0);
}
