// The HTTP side of the control server and of daqx-launch's dashboard: Poco's server, the listening socket (plain
// or TLS), and reading requests for the routes.
#include "http_server.hpp"

#include <algorithm>
#include <istream>
#include <mutex>
#include <stdexcept>
#include <system_error>

#include <Poco/Exception.h>
#include <Poco/Net/HTTPRequestHandler.h>
#include <Poco/Net/HTTPRequestHandlerFactory.h>
#include <Poco/Net/HTTPServerParams.h>
#include <Poco/Net/HTTPServerRequest.h>
#include <Poco/Net/HTTPServerResponse.h>
#include <Poco/Net/HTTPServerConnection.h>
#include <Poco/Net/NetException.h>
#include <Poco/Net/SecureServerSocket.h>
#include <Poco/Net/SecureStreamSocket.h>
#include <Poco/Net/ServerSocket.h>
#include <Poco/Net/SocketAddress.h>
#include <Poco/Net/TCPServer.h>
#include <Poco/Net/TCPServerConnection.h>
#include <Poco/Net/TCPServerConnectionFactory.h>
#include <Poco/ThreadPool.h>
#include <Poco/Timespan.h>

#include <atomic>
#include <chrono>

#include "daqx/services/log.hpp"
#include "tls_context.hpp"

namespace daqx {
namespace {

// A body over kMaxRequestBody but under this is read and dropped, so the client still gets its 413: closing
// with unread data would reset the connection and lose the answer. Past it the connection is just closed.
constexpr std::size_t kMaxDrainedBody = 64u << 20;

// Reads at most `limit` bytes of the body into `into` (or drops them when `into` is null); returns how many came.
std::size_t read_body(std::istream& in, std::string* into, std::size_t limit) {
  char buffer[16384];
  std::size_t total = 0;
  while (total < limit && in) {
    in.read(buffer, static_cast<std::streamsize>(std::min(sizeof buffer, limit - total)));
    const auto count = static_cast<std::size_t>(in.gcount());
    if (count == 0) break;
    if (into != nullptr) into->append(buffer, count);
    total += count;
  }
  return total;
}

http::Request read_request(Poco::Net::HTTPServerRequest& request) {
  http::Request parsed;
  parsed.method = request.getMethod();
  parsed.target = request.getURI();
  parsed.authorization = request.get(Poco::Net::HTTPRequest::AUTHORIZATION, "");
  const bool has_length = request.hasContentLength();
  // Without a length or chunking a request has no body (RFC 9112 6.3); Poco would read to the end of the
  // connection instead, which a client that keeps it open would turn into a hang.
  if (!has_length && !request.getChunkedTransferEncoding()) return parsed;
  // A length that is not a number never gets here: Poco refuses it while reading the header.
  const std::int64_t length = has_length ? request.getContentLength64() : -1;
  if (has_length && length < 0) {
    parsed.framing_error = "bad Content-Length: '" + request.get(Poco::Net::HTTPMessage::CONTENT_LENGTH) + "'";
    return parsed;
  }
  if (length > static_cast<std::int64_t>(http::kMaxRequestBody)) {
    parsed.body_too_large = true;
    if (length <= static_cast<std::int64_t>(kMaxDrainedBody)) read_body(request.stream(), nullptr, kMaxDrainedBody);
    return parsed;
  }
  read_body(request.stream(), &parsed.body, http::kMaxRequestBody + 1);
  if (parsed.body.size() > http::kMaxRequestBody) {  // chunked, so its size shows only now
    parsed.body_too_large = true;
    parsed.body.clear();
    read_body(request.stream(), nullptr, kMaxDrainedBody);
  } else if (length >= 0 && parsed.body.size() < static_cast<std::size_t>(length)) {
    parsed.body_incomplete = true;
  }
  return parsed;
}

class RequestHandler : public Poco::Net::HTTPRequestHandler {
 public:
  RequestHandler(const http::Handler& handler, const http::AccessCheck& access) : handler_(handler), access_(access) {}

  void handleRequest(Poco::Net::HTTPServerRequest& request, Poco::Net::HTTPServerResponse& response) override {
    http::Reply reply;
    try {
      reply = handler_(read_request(request), access_);
    } catch (const Poco::Exception& error) {
      reply = internal_error(error.displayText());
    } catch (const std::exception& error) {
      reply = internal_error(error.what());
    } catch (...) {
      reply = internal_error("unknown exception");
    }
    try {
      using Poco::Net::HTTPResponse;
      response.setStatus(std::to_string(reply.status));
      // Poco's status enum ends at 511; a cast past its range would be undefined.
      response.setReason(reply.status <= 511
                             ? HTTPResponse::getReasonForStatus(static_cast<HTTPResponse::HTTPStatus>(reply.status))
                             : std::string("Error"));
      response.setContentType(reply.content_type);
      response.set("Cache-Control", "no-store");
      if (!reply.allow.empty()) response.set("Allow", reply.allow);
      if (!reply.www_authenticate.empty()) response.set("WWW-Authenticate", reply.www_authenticate);
      if (!reply.location.empty()) response.set("Location", reply.location);
      response.sendBuffer(reply.body.data(), reply.body.size());
    } catch (...) {
      // The client went away while we answered: there is no one left to tell.
    }
  }

 private:
  static http::Reply internal_error(const std::string& reason) {
    http::Reply reply;
    reply.status = 500;
    reply.content_type = http::kTextType;
    reply.body = "internal error: " + reason + "\n";
    return reply;
  }

  const http::Handler& handler_;
  const http::AccessCheck& access_;
};

class RequestHandlerFactory : public Poco::Net::HTTPRequestHandlerFactory {
 public:
  RequestHandlerFactory(http::Handler handler, const http::AccessCheck& access)
      : handler_(std::move(handler)), access_(access) {}
  Poco::Net::HTTPRequestHandler* createRequestHandler(const Poco::Net::HTTPServerRequest&) override {
    return new RequestHandler(handler_, access_);
  }
  // What HTTPServer::stopAll does for its connections; ours are made by ConnectionFactory below, not HTTPServer.
  void stop_connections(bool abort_current) { serverStopped(this, abort_current); }

 private:
  const http::Handler handler_;
  const http::AccessCheck& access_;
};

// Failed handshakes are logged at most once a second, with how many were not: a port scanner must not flood the log.
class HandshakeFailureLog {
 public:
  void failed(const std::string& peer, const std::string& reason) {
    using Clock = std::chrono::steady_clock;
    const std::int64_t now = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now().time_since_epoch()).count();
    std::int64_t last = last_ms_.load(std::memory_order_relaxed);
    if (last != 0 && now - last < 1000) {
      suppressed_.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    if (!last_ms_.compare_exchange_strong(last, now)) {
      suppressed_.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    const std::uint64_t others = suppressed_.exchange(0, std::memory_order_relaxed);
    log(LogLevel::warning, "control",
        "refused a connection from " + peer + " that did not complete a TLS handshake (" + reason + ")" +
            (others != 0 ? "; " + std::to_string(others) + " more since the last report" : ""));
  }

 private:
  std::atomic<std::int64_t> last_ms_{0};
  std::atomic<std::uint64_t> suppressed_{0};
};

// One accepted connection: on a TLS port the handshake first, counted and dropped when it fails (a plain HTTP client,
// a wrong CA on the client side, a scanner), then Poco's HTTP connection on the same socket. Poco's HTTPServer would
// do the handshake inside its request parsing and hand a failure to its global error handler, unseen.
class Connection : public Poco::Net::TCPServerConnection {
 public:
  Connection(const Poco::Net::StreamSocket& socket, Poco::Net::HTTPServerParams::Ptr params,
             Poco::SharedPtr<RequestHandlerFactory> handlers, const http::AccessCheck& access, bool tls,
             HandshakeFailureLog& failures)
      : TCPServerConnection(socket), params_(params), handlers_(handlers), access_(access), tls_(tls), failures_(failures) {}

  void run() override {
    try {
      // Made first so that a server stopping with abort closes this socket, also during the handshake.
      Poco::Net::HTTPServerConnection http(socket(), params_, Poco::Net::HTTPRequestHandlerFactory::Ptr(handlers_));
      if (tls_ && !handshake()) return;
      http.run();
    } catch (...) {
      // The client went away mid-request (or the server is stopping): nothing to answer, nobody to tell.
    }
  }

 private:
  bool handshake() {
    std::string peer = "?";
    try {
      peer = socket().peerAddress().toString();
      socket().setReceiveTimeout(params_->getTimeout());
      socket().setSendTimeout(params_->getTimeout());
      Poco::Net::SecureStreamSocket secure(socket());
      secure.completeHandshake();
      return true;
    } catch (const Poco::Exception& error) {
      access_.count_tls_refusal();
      failures_.failed(peer, error.displayText());
    } catch (const std::exception& error) {
      access_.count_tls_refusal();
      failures_.failed(peer, error.what());
    }
    return false;
  }

  Poco::Net::HTTPServerParams::Ptr params_;
  Poco::SharedPtr<RequestHandlerFactory> handlers_;
  const http::AccessCheck& access_;
  bool tls_;
  HandshakeFailureLog& failures_;
};

class ConnectionFactory : public Poco::Net::TCPServerConnectionFactory {
 public:
  ConnectionFactory(Poco::Net::HTTPServerParams::Ptr params, Poco::SharedPtr<RequestHandlerFactory> handlers,
                    const http::AccessCheck& access, bool tls)
      : params_(params), handlers_(handlers), access_(access), tls_(tls) {}
  Poco::Net::TCPServerConnection* createConnection(const Poco::Net::StreamSocket& socket) override {
    return new Connection(socket, params_, handlers_, access_, tls_, failures_);
  }

 private:
  Poco::Net::HTTPServerParams::Ptr params_;
  Poco::SharedPtr<RequestHandlerFactory> handlers_;
  const http::AccessCheck& access_;
  bool tls_;
  HandshakeFailureLog failures_;
};

// A TLS server socket when a certificate is given, else a plain one.
Poco::Net::ServerSocket make_socket(const ControlServerSecurity& security) {
  if (security.certificate_file.empty() && security.key_file.empty()) return Poco::Net::ServerSocket();
  if (security.certificate_file.empty() || security.key_file.empty())
    throw std::runtime_error("TLS needs both a certificate and a key file");
  return Poco::Net::SecureServerSocket(http::server_tls_context(security.certificate_file, security.key_file));
}

// The errno text for socket errors ("Address already in use"), Poco's own text for the rest.
std::string listen_failure_reason(const Poco::Exception& error) {
  if (dynamic_cast<const Poco::Net::DNSException*>(&error) == nullptr && error.code() > 0) {
    return std::system_category().message(error.code());
  }
  return error.displayText();
}

}  // namespace

namespace http {

struct HttpServer::Impl {
  Impl(Handler handler, const std::string& host, std::uint16_t wanted_port, unsigned threads,
       const ControlServerSecurity& security)
      : access(AccessRules{security.token, security.reads_need_token}),
        socket(make_socket(security)),
        thread_pool("daqx-http", 1, static_cast<int>(std::max(threads, 1u))) {
    try {
      // Not Poco's ServerSocket(address) constructor: it sets SO_REUSEPORT, which would let a second executive
      // listen on a port already taken instead of being told so.
      socket.bind(Poco::Net::SocketAddress(host.empty() ? std::string("0.0.0.0") : host, wanted_port),
                  /*reuseAddress=*/true, /*reusePort=*/false);
      socket.listen(64);
    } catch (const Poco::Exception& error) {
      throw std::runtime_error("cannot listen on " + host + ":" + std::to_string(wanted_port) + ": " +
                               listen_failure_reason(error));
    }
    port = socket.address().port();

    Poco::Net::HTTPServerParams::Ptr params = new Poco::Net::HTTPServerParams;
    params->setMaxThreads(static_cast<int>(std::max(threads, 1u)));
    params->setMaxQueued(64);
    // A kept-alive connection holds one of the few server threads while idle (a status page refreshing every
    // 2 s would hold it for good); control traffic is a request every few seconds, so close after each answer.
    params->setKeepAlive(false);
    // Each connection holds a thread while it sends its request: one that stalls (or a browser's idle preconnect)
    // is dropped after this, so a few of them block the server for seconds at most. Real requests come in one go.
    params->setTimeout(Poco::Timespan(3, 0));
    params->setSoftwareVersion("daqx");
    handlers = new RequestHandlerFactory(std::move(handler), access);
    const bool tls = !security.certificate_file.empty();
    server = std::make_unique<Poco::Net::TCPServer>(new ConnectionFactory(params, handlers, access, tls), thread_pool,
                                                    socket, params);
  }

  std::mutex mutex;  // start and stop may come from different threads (signal handler thread, main)
  bool started = false;
  bool stopped = false;
  std::uint16_t port = 0;
  http::AccessCheck access;  // before the server: its connections use it until they end
  Poco::Net::ServerSocket socket;
  Poco::ThreadPool thread_pool;                   // declared before the server: it must outlive it
  Poco::SharedPtr<RequestHandlerFactory> handlers;
  std::unique_ptr<Poco::Net::TCPServer> server;
};

HttpServer::HttpServer(Handler handler, const std::string& host, std::uint16_t port, unsigned threads,
                       const ControlServerSecurity& security)
    : impl_(std::make_unique<Impl>(std::move(handler), host, port, threads, security)) {}

HttpServer::~HttpServer() {
  try {
    stop();
  } catch (...) {
    // Nothing sensible to do in a destructor; the threads are joined by Poco's pool on destruction.
  }
}

void HttpServer::start() {
  std::lock_guard lock(impl_->mutex);
  if (impl_->stopped) throw std::logic_error("HttpServer::start after stop");
  if (impl_->started) return;
  impl_->server->start();
  impl_->started = true;
}

void HttpServer::stop() {
  std::lock_guard lock(impl_->mutex);
  if (impl_->stopped) return;
  impl_->stopped = true;
  impl_->server->stop();
  impl_->handlers->stop_connections(/*abort_current=*/true);
  impl_->thread_pool.joinAll();
  impl_->socket.close();  // frees the port at once, for an executive restarted on it
}

std::uint16_t HttpServer::port() const noexcept { return impl_->port; }
const AccessCheck& HttpServer::access() const noexcept { return impl_->access; }

}  // namespace http
}  // namespace daqx
