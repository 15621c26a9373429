// A small blocking HTTP client for an executive's control API, used by daqxctl, the launcher and tests.
#pragma once

#include <chrono>
#include <string>

namespace daqx {

struct HttpReply {
  int status = 0;      // 0: no answer (connection refused, timeout); the reason is in body
  std::string body;
  bool answered() const noexcept { return status != 0; }
};

class ControlClient {
 public:
  // url: http://host:port (a trailing path is ignored).
  explicit ControlClient(const std::string& url, std::chrono::milliseconds timeout = std::chrono::seconds(10));
  HttpReply get(const std::string& path) const;
  HttpReply post(const std::string& path, const std::string& json_body) const;
  const std::string& url() const noexcept { return url_; }

 private:
  HttpReply request(const std::string& method, const std::string& path, const std::string& body) const;
  std::string url_;
  std::string host_;
  unsigned short port_ = 0;
  std::chrono::milliseconds timeout_;
};

}  // namespace daqx
