// The HTTP server under the control server and daqx-launch's dashboard: Poco's server on a socket bound at once
// (plain or TLS), each request read whole and answered by a handler.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "access_check.hpp"
#include "control_routes.hpp"
#include "daqx/control/control_server.hpp"

namespace daqx::http {

// Called from the server's threads concurrently; `access` is the server's own check (and count of refusals).
using Handler = std::function<Reply(const Request& request, const AccessCheck& access)>;

// What ControlServer documents: binds in the constructor ("cannot listen on HOST:PORT: REASON"), serves at most
// `threads` requests at once, closes each connection after its answer, reads each request whole within a deadline
// (TLS handshake included) and answers parser refusals with a JSON reason. A reply that is pending (a wait) leaves
// the request thread: the connection is parked and answered when the reply is known (pending_replies.hpp).
class HttpServer {
 public:
  HttpServer(Handler handler, const std::string& host, std::uint16_t port, unsigned threads,
             const ControlServerSecurity& security);
  ~HttpServer();  // stops
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  void start();  // once
  void stop();   // idempotent; afterwards the handler is no longer called
  std::uint16_t port() const noexcept;
  const AccessCheck& access() const noexcept;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace daqx::http
