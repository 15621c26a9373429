// Fuzz target: the control server's request handling (executive/control/src/routes.cpp and what it calls) on a real
// executive: the nton module's ping-pong pair in one context, as daqx-executive would host it, behind an open port
// and behind a token, in a partition whose name holds bytes that are not UTF-8. Any method, target (path, query,
// escapes), body and Authorization header. Properties:
// nothing a client sends is answered 500 "internal error" (an exception the routes did not turn into a clear
// answer: malformed escapes and numbers are 400s); every status is a real one; everything under /api answers in
// JSON that parses, with a reason for every error; every JSON and HTML answer is valid UTF-8.
#include <Poco/JSON/Parser.h>
#include <Poco/URI.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "control_routes.hpp"
#include "daqx/executive/executive.hpp"
#include "daqx/services/text.hpp"

namespace {

// Ping-pong between two applications of one context, a bounded exchange of small frames once enabled. The
// partition's name holds markup and a character of several bytes (a partition can hold no byte that is not UTF-8
// and no control character): every page and JSON answer that shows it must still be valid UTF-8.
constexpr const char* kPartition = "<Partition name=\"fuzz-\xc3\xa9-&lt;b&gt;-control\">" R"(
  <Context url="http://127.0.0.1:1">
    <Module path="libdaqx_nton.so"/>
    <Application class="nton::PingPong" id="2" instance="1"><Properties><role>pong</role></Properties></Application>
    <Application class="nton::PingPong" id="1" instance="0">
      <Properties><role>ping</role><frameSize type="unsigned">64</frameSize><count type="unsigned">200</count></Properties>
    </Application>
  </Context>
</Partition>
)";

std::unique_ptr<daqx::Executive> executive;
std::unique_ptr<daqx::http::AccessCheck> open_access;
std::unique_ptr<daqx::http::AccessCheck> guarded_access;
daqx::http::Pages pages;

[[noreturn]] void fail(const char* what, const daqx::http::Request& request, const daqx::http::Reply& reply) {
  std::fprintf(stderr, "control_request_fuzz: %s\n  %s %s\n  -> %d %s\n  %.400s\n", what, request.method.c_str(),
               request.target.c_str(), reply.status, reply.content_type.c_str(), reply.body.c_str());
  std::abort();
}

bool under_api(const std::string& target) {
  std::string path;
  try {
    path = Poco::URI(target).getPath();
  } catch (const Poco::Exception&) {
    path = target;  // as the routes see a target that is not a URI
  }
  return path == "/api" || path.starts_with("/api/");
}


// The input as lines, so that seeds and the dictionary read as requests: METHOD, TARGET, AUTHORIZATION (empty:
// none), FLAGS (characters: g = behind the token, l = body too large, i = body incomplete), then the body.
std::string_view next_line(std::string_view& rest) {
  const std::size_t end = rest.find('\n');
  const std::string_view line = rest.substr(0, end);
  rest = end == std::string_view::npos ? std::string_view() : rest.substr(end + 1);
  return line;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  executive = std::make_unique<daqx::Executive>(daqx::config::parse_partition(kPartition, "fuzz-control.xml"),
                                                "http://127.0.0.1:1", 256);
  open_access = std::make_unique<daqx::http::AccessCheck>();
  guarded_access = std::make_unique<daqx::http::AccessCheck>(daqx::http::AccessRules{"fuzz-token", false});
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view rest(reinterpret_cast<const char*>(data), size);
  daqx::http::Request request;
  request.method = next_line(rest);
  request.target = next_line(rest);
  request.authorization = next_line(rest);
  const std::string_view flags = next_line(rest);
  const bool guarded = flags.find('g') != std::string_view::npos;
  request.body_too_large = flags.find('l') != std::string_view::npos;
  request.body_incomplete = flags.find('i') != std::string_view::npos;
  request.body = rest;

  daqx::http::Reply reply =
      daqx::http::handle_request(executive->control(), request, guarded ? *guarded_access : *open_access, &pages);
  if (reply.pending != nullptr) {  // a wait: polled once, as the server would, else its answer when stopped
    const std::shared_ptr<daqx::http::PendingReply> pending = std::move(reply.pending);
    std::optional<daqx::http::Reply> answer = pending->poll();
    reply = answer ? std::move(*answer) : pending->stopped();
  }
  if (reply.status < 200 || reply.status > 599) fail("a status that is not one", request, reply);
  if (reply.status == 500 && reply.body.find("internal error") != std::string::npos)
    fail("an exception answered as 500: a client's mistake must be a 4xx with its reason", request, reply);
  const bool json = reply.content_type == daqx::http::kJsonType;
  if (under_api(request.target) && !json) fail("an /api answer that is not JSON", request, reply);
  if ((json || reply.content_type == daqx::http::kHtmlType) && daqx::strings::valid_utf8(reply.body) != reply.body)
    fail("an answer that is not valid UTF-8", request, reply);
  if (json && request.method != "HEAD") {
    Poco::Dynamic::Var parsed;
    try {
      parsed = Poco::JSON::Parser().parse(reply.body);
    } catch (const Poco::Exception& error) {
      fail(("JSON that does not parse: " + error.displayText()).c_str(), request, reply);
    }
    if (reply.status >= 400) {
      const auto object = parsed.extract<Poco::JSON::Object::Ptr>();
      if (object.isNull() || !object->has("error") || object->getValue<std::string>("error").empty())
        fail("an error without a reason", request, reply);
    }
  }
  return 0;
}
