// The exchanges: the raw answer split at its blank line, each header line at its first colon.
#include "http_exchange.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cctype>
#include <cstdlib>

#include "json_reader.hpp"

namespace daqx::test {

namespace {

HttpAnswer parse_answer(const std::string& raw) {
  HttpAnswer answer;
  const std::size_t header_end = raw.find("\r\n\r\n");
  if (!raw.starts_with("HTTP/1.") || header_end == std::string::npos) return answer;
  answer.status = std::atoi(raw.c_str() + raw.find(' ') + 1);
  std::size_t line_start = raw.find("\r\n") + 2;
  while (line_start < header_end) {
    const std::size_t line_end = raw.find("\r\n", line_start);
    const std::string line = raw.substr(line_start, line_end - line_start);
    const std::size_t colon = line.find(':');
    std::string name = line.substr(0, colon);
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    std::string value = colon == std::string::npos ? "" : line.substr(colon + 1);
    while (!value.empty() && value.front() == ' ') value.erase(0, 1);
    answer.headers[name] = value;
    line_start = line_end + 2;
  }
  answer.body = raw.substr(header_end + 4);
  if (answer.headers.count("content-length")) {
    answer.body.resize(std::min(answer.body.size(), std::stoul(answer.headers["content-length"])));
  }
  return answer;
}

}  // namespace

HttpAnswer receive_answer(RawClient& client) { return parse_answer(client.read_all()); }

HttpAnswer round_trip(std::uint16_t port, std::string_view bytes) {
  RawClient client(port);
  // What a server that refuses the rest does not take is not sent: the answer then says why.
  client.send(std::string(bytes));
  client.finish_sending();
  return receive_answer(client);
}

HttpAnswer request(std::uint16_t port, const std::string& method, const std::string& target,
                   const std::optional<std::string>& body) {
  std::string text = method + " " + target + " HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port) +
                     "\r\nConnection: close\r\n";
  if (body) text += "Content-Type: application/json\r\nContent-Length: " + std::to_string(body->size()) + "\r\n";
  text += "\r\n";
  if (body) text += *body;
  return round_trip(port, text);
}

HttpAnswer get(std::uint16_t port, const std::string& target) { return request(port, "GET", target); }

HttpAnswer post(std::uint16_t port, const std::string& target, const std::string& body) {
  return request(port, "POST", target, body);
}

std::string command_body(const std::string& command) { return R"({"command":")" + command + R"("})"; }

void require_json_error(const HttpAnswer& answer, int status) {
  INFO(answer.body);
  REQUIRE(answer.status == status);
  REQUIRE(answer.header("content-type").starts_with("application/json"));
  const Json error = parse_json(answer.body);
  REQUIRE(error.is(Json::Type::object));
  REQUIRE(error["error"].is(Json::Type::string));
  REQUIRE_FALSE(error["error"].string.empty());
}

}  // namespace daqx::test
