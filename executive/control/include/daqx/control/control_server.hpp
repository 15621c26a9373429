// The HTTP server of an executive: HTML status pages, the JSON control API and Prometheus /metrics over a ControlModel.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "daqx/executive/control.hpp"
#include "daqx/executive/partition.hpp"
#include "daqx/executive/resource_plan.hpp"

namespace daqx {

class PartitionView;

// The threads an executive's control server runs requests on (made as needed): a browser on the live pages keeps
// a couple of requests going, a handful of clients that trickle or stall hold one each for the request deadline
// (5 s), and status reads, stop and halt must still get in at once. Connect waits hold none (the server parks
// them until they are answered).
inline constexpr unsigned kControlServerThreads = kControlRequestThreads;

// Who may use the control port and how it is reached (docs/control-api.md, "Access").
struct ControlServerSecurity {
  std::string token;              // requests other than GET and HEAD must present it as a bearer token; empty: open
  bool reads_need_token = false;  // GET and HEAD need it too
  std::string certificate_file;   // PEM certificate (chain); with key_file the port speaks TLS only
  std::string key_file;           // PEM private key

  // From the partition's <Control>; DAQX_TOKEN_FILE, when set, names the token file instead of tokenFile. Reads
  // the token file (read_token_file) and throws std::runtime_error when it cannot be used, or when reads="token"
  // leaves no token to ask for.
  static ControlServerSecurity from(const config::Partition& partition);
};

// Serves the routes documented in docs/control-api.md. The model is borrowed and must outlive the server; it is
// called from the server's threads concurrently, so it must be thread-safe.
class ControlServer {
 public:
  // Binds and listens at once, so a busy port is reported here and not later: throws std::runtime_error
  // "cannot listen on HOST:PORT: REASON". Host "0.0.0.0" (or "") listens on every interface; port 0 picks a free
  // port.
  // `threads` bounds the requests served at once; more wait in a queue of 64 (connect waits hold no thread: they
  // are parked until answered, at most 32 at once). Each request (TLS handshake included) must arrive whole within
  // 5 s, else it is answered 408 (or dropped) and counted; what the HTTP parser refuses is a 400 with a JSON reason
  // (docs/control-api.md, "Slow, malformed and long requests").
  // With a `partition_view` (borrowed, must outlive the server) it also serves GET /partition and /api/partition.
  ControlServer(ControlModel& model, const std::string& host, std::uint16_t port, unsigned threads = 2,
                const ControlServerSecurity& security = {}, PartitionView* partition_view = nullptr);
  ~ControlServer();  // stops, as stop() does

  ControlServer(const ControlServer&) = delete;
  ControlServer& operator=(const ControlServer&) = delete;

  void start();  // starts accepting connections; once
  // The executive is about to shut down: connect waits in progress end at once (503, "stopping") and new ones
  // are refused, while other requests are still served until stop(). Called before the executive tears down
  // its transports, so that a wait never reads a context without connections as "all up". Idempotent.
  void begin_stop() noexcept;
  // Stops accepting, aborts requests in progress and waits for the server threads: after it returns the model is
  // no longer called. Idempotent.
  void stop();

  std::uint16_t port() const noexcept;  // the port listened on, also when 0 was asked for

 private:
  struct Impl;  // keeps Poco out of the public headers: it is a private dependency of daqx::control
  std::unique_ptr<Impl> impl_;
};

}  // namespace daqx
