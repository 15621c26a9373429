// The raw client: a socket, poll and recv, nothing that would fix a request up.
#include "raw_client.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <Poco/JSON/Parser.h>

#include <algorithm>
#include <cstdlib>

namespace daqx::test {

RawClient::RawClient(std::uint16_t port) : fd_(::socket(AF_INET, SOCK_STREAM, 0)) {
  // A server that stops reading a long request without closing fails the send instead of blocking the test.
  const timeval send_limit{20, 0};
  if (fd_ >= 0) ::setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &send_limit, sizeof send_limit);
  sockaddr_in peer{};
  peer.sin_family = AF_INET;
  peer.sin_port = htons(port);
  ::inet_pton(AF_INET, "127.0.0.1", &peer.sin_addr);
  connected_ = fd_ >= 0 && ::connect(fd_, reinterpret_cast<const sockaddr*>(&peer), sizeof peer) == 0;
}

RawClient::~RawClient() {
  if (fd_ >= 0) ::close(fd_);
}

bool RawClient::send(const std::string& bytes) {
  std::size_t sent = 0;
  while (sent < bytes.size()) {
    const ssize_t count = ::send(fd_, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (count <= 0) return false;
    sent += static_cast<std::size_t>(count);
  }
  return true;
}

void RawClient::finish_sending() { ::shutdown(fd_, SHUT_WR); }

std::string RawClient::read_until(const std::string& marker, std::chrono::milliseconds limit) {
  using Clock = std::chrono::steady_clock;
  std::string text;
  const auto deadline = Clock::now() + limit;
  char buffer[4096];
  while (Clock::now() < deadline) {
    pollfd p{fd_, POLLIN, 0};
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (::poll(&p, 1, static_cast<int>(std::max<long long>(left, 1))) <= 0) break;
    const ssize_t got = ::recv(fd_, buffer, sizeof buffer, 0);
    if (got <= 0) break;
    text.append(buffer, static_cast<std::size_t>(got));
    if (!marker.empty() && text.find(marker) != std::string::npos) break;
  }
  return text;
}

bool RawClient::closed_within(std::chrono::milliseconds limit) {
  pollfd p{fd_, POLLIN, 0};
  return ::poll(&p, 1, static_cast<int>(limit.count())) > 0;
}

int status_of(const std::string& answer) {
  if (answer.rfind("HTTP/1.", 0) != 0 || answer.size() < 12) return -1;
  return std::atoi(answer.c_str() + 9);
}

std::string body_of(const std::string& answer) {
  const std::size_t at = answer.find("\r\n\r\n");
  return at == std::string::npos ? std::string() : answer.substr(at + 4);
}

std::string json_error_of(const std::string& body) {
  try {
    Poco::JSON::Parser parser;
    auto object = parser.parse(body).extract<Poco::JSON::Object::Ptr>();
    return object->has("error") ? object->getValue<std::string>("error") : std::string();
  } catch (...) {
    return {};
  }
}

}  // namespace daqx::test
