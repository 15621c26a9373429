// A TCP client of a control port that sends exactly the bytes it is told, when it is told (malformed, cut off,
// trickled requests), and reads the raw answer: for tests of what the server does with what no HTTP library sends.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace daqx::test {

class RawClient {
 public:
  explicit RawClient(std::uint16_t port);  // to 127.0.0.1:port
  ~RawClient();
  RawClient(const RawClient&) = delete;
  RawClient& operator=(const RawClient&) = delete;

  bool connected() const { return connected_; }
  // Sends all of `bytes`; false once the server has closed its side (a send then fails) or stopped reading for 20 s.
  bool send(const std::string& bytes);
  // Says no more bytes will come (a half-close): the server sees the end of the request.
  void finish_sending();
  // What the server sends until `marker` has come (an interim answer such as 100 Continue), it closes, or `limit`
  // passes.
  std::string read_until(const std::string& marker, std::chrono::milliseconds limit = std::chrono::seconds(20));
  // Everything the server sends until it closes, or until `limit` passes.
  std::string read_all(std::chrono::milliseconds limit = std::chrono::seconds(20)) { return read_until({}, limit); }
  // Whether the server closed the connection (or answered) within `limit`.
  bool closed_within(std::chrono::milliseconds limit);

 private:
  int fd_;
  bool connected_ = false;
};

// The status of a raw answer; -1 when it is not an HTTP answer (none came).
int status_of(const std::string& answer);
// The body of a raw answer.
std::string body_of(const std::string& answer);
// The "error" of a JSON answer; empty when the body is not a JSON object with one.
std::string json_error_of(const std::string& body);

}  // namespace daqx::test
