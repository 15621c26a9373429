// A small blocking HTTP(S) client for an executive's control API, used by daqxctl, the launcher and tests.
#pragma once

#include <chrono>
#include <string>

namespace daqx {

namespace config {
struct Partition;
}

struct HttpReply {
  int status = 0;      // 0: no answer (connection refused, timeout, TLS handshake refused); the reason is in body
  std::string body;
  bool timed_out = false;  // no answer within the timeout: the context took the connection (or not) and said nothing
  bool answered() const noexcept { return status != 0; }
};

// What a client presents to the executives and what it trusts (docs/control-api.md, "Access").
struct ControlAccess {
  std::string token;    // sent as "Authorization: Bearer TOKEN" on every request; empty: none
  std::string ca_file;  // PEM CA an https:// executive's certificate must chain to; empty: the system's CAs

  // Files given explicitly (a command line's --token-file, --ca-file); empty: not given.
  struct Files {
    std::string token_file;
    std::string ca_file;
  };
  // Each of the two from the first place that names it: `given`, then the environment (DAQX_TOKEN_FILE,
  // DAQX_CA_FILE), then the partition's <Control> (tokenFile, ca), when a partition is given. Reads the token file
  // (read_token_file) and throws std::runtime_error when it cannot be used.
  static ControlAccess from(const config::Partition* partition, const Files& given = {});
};

// The access every ControlClient made afterwards without one of its own uses; none at first. Thread-safe.
void set_default_control_access(const ControlAccess& access);
ControlAccess default_control_access();

class ControlClient {
 public:
  // url: http://host:port or https://host:port (a trailing path is ignored). Uses default_control_access().
  explicit ControlClient(const std::string& url, std::chrono::milliseconds timeout = std::chrono::seconds(10));
  ControlClient(const std::string& url, std::chrono::milliseconds timeout, ControlAccess access);
  HttpReply get(const std::string& path) const;
  HttpReply post(const std::string& path, const std::string& json_body) const;
  const std::string& url() const noexcept { return url_; }

 private:
  HttpReply request(const std::string& method, const std::string& path, const std::string& body) const;
  std::string plain_to_tls_hint() const;
  std::string url_;
  std::string host_;
  unsigned short port_ = 0;
  bool tls_ = false;
  std::chrono::milliseconds timeout_;
  ControlAccess access_;
};

}  // namespace daqx
