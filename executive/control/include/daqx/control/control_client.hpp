// A small blocking HTTP(S) client for an executive's control API, used by daqxctl, the launcher and tests.
#pragma once

#include <chrono>
#include <iosfwd>
#include <memory>
#include <string>

namespace Poco::Net {
class HTTPClientSession;
}

namespace daqx {

namespace config {
struct Partition;
}

struct HttpReply {
  int status = 0;      // 0: no answer (connection refused, timeout, TLS handshake refused); the reason is in body
  std::string body;
  bool timed_out = false;  // no answer within the timeout: the context took the connection (or not) and said nothing
  bool connected = false;  // the connection was made: a process listens there, whether or not it answered
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

// A request sent whose answer is not read yet: the two steps apart let one thread wait for the answers of several
// requests at once (ControlRequestPool) on their sockets, and read each one when it can be read.
class SentControlRequest {
 public:
  SentControlRequest(SentControlRequest&&) noexcept;
  SentControlRequest& operator=(SentControlRequest&&) noexcept;
  ~SentControlRequest();  // closes the connection

  // The connection's socket to wait on until it can be read; -1 when the request failed already (finished() then
  // says why).
  int socket_fd() const noexcept;
  // Reads the answer, waiting at most `timeout` for each read; every failure is a reply with status 0.
  HttpReply receive(std::chrono::milliseconds timeout);
  // Reads the answer's head only, for an answer that goes on (a stream's records): a 200's body is left to be read
  // from `body` as it comes (chunks decoded; valid while this object lives, each read waiting at most `timeout`);
  // any other answer's body is read whole into the reply and `body` is null.
  HttpReply receive_head(std::chrono::milliseconds timeout, std::istream*& body);
  // When it could not be sent: the reply saying why.
  const HttpReply& failure() const noexcept { return failure_; }

 private:
  friend class ControlClient;
  SentControlRequest(std::unique_ptr<Poco::Net::HTTPClientSession> session, std::string tls_hint, HttpReply failure);
  std::unique_ptr<Poco::Net::HTTPClientSession> session_;  // null when it failed
  std::string tls_hint_;
  HttpReply failure_;
};

class ControlClient {
 public:
  // url: http://host:port or https://host:port (a trailing path is ignored). Uses default_control_access().
  explicit ControlClient(const std::string& url, std::chrono::milliseconds timeout = std::chrono::seconds(10));
  ControlClient(const std::string& url, std::chrono::milliseconds timeout, ControlAccess access);
  HttpReply get(const std::string& path) const;
  HttpReply post(const std::string& path, const std::string& json_body) const;
  const std::string& url() const noexcept { return url_; }

  // Opens the connection and sends the request (connect and send bounded by the timeout); the answer is read by
  // the result's receive(). Every failure is in the result, none is thrown.
  SentControlRequest send(const std::string& method, const std::string& path, const std::string& body) const;

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
