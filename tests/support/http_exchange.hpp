// HTTP/1.1 exchanges with a control port over a RawClient: a request sent whole (and the sending side closed, so a
// malformed one is answered at once), its answer read to the end and taken apart: status, headers, body.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "raw_client.hpp"

namespace daqx::test {

struct HttpAnswer {
  int status = 0;                              // 0: the connection closed without an answer
  std::map<std::string, std::string> headers;  // names in lower case
  std::string body;                            // cut to Content-Length where there is one
  std::string header(const std::string& name) const {
    auto found = headers.find(name);
    return found == headers.end() ? std::string() : found->second;
  }
};

// Everything the server sends on `client` until it closes, taken apart.
HttpAnswer receive_answer(RawClient& client);

// Sends exactly `bytes` on a new connection to 127.0.0.1:port, closes the sending side, and reads the answer.
HttpAnswer round_trip(std::uint16_t port, std::string_view bytes);

// A well-formed request (Connection: close; a body is sent as JSON with its Content-Length).
HttpAnswer request(std::uint16_t port, const std::string& method, const std::string& target,
                   const std::optional<std::string>& body = std::nullopt);
HttpAnswer get(std::uint16_t port, const std::string& target);
HttpAnswer post(std::uint16_t port, const std::string& target, const std::string& body);

// The body of a transition request: {"command":"<command>"}.
std::string command_body(const std::string& command);

// Requires that `answer` is the control API's error: that status, a JSON object with a non-empty "error".
void require_json_error(const HttpAnswer& answer, int status);

}  // namespace daqx::test
