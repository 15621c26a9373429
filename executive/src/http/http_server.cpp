// The HTTP side of the control server and of daqx-launch's dashboard: Poco's server, the listening socket (plain
// or TLS), and reading requests for the routes.
#include "http_server.hpp"

#include <algorithm>
#include <istream>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <system_error>

#include <Poco/Exception.h>
#include <Poco/Net/HTTPRequestHandler.h>
#include <Poco/Net/HTTPRequestHandlerFactory.h>
#include <Poco/Net/HTTPServerParams.h>
#include <Poco/Net/HTTPServerRequest.h>
#include <Poco/Net/HTTPServerResponse.h>
#include <Poco/Net/HTTPServerRequestImpl.h>
#include <Poco/Net/HTTPServerResponseImpl.h>
#include <Poco/Net/HTTPServerSession.h>
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

#include <sys/socket.h>

#include <atomic>
#include <chrono>

#include "daqx/services/log.hpp"
#include "daqx/services/text.hpp"
#include "pending_replies.hpp"
#include "reply_writer.hpp"
#include "request_deadlines.hpp"
#include "tls_context.hpp"

namespace daqx {
namespace {

// A body over kMaxRequestBody but under this is read and dropped, so the client still gets its 413: closing
// with unread data would reset the connection and lose the answer. Past it the connection is just closed.
constexpr std::size_t kMaxDrainedBody = 64u << 20;

// A request (TLS handshake, request line, header fields and body) must arrive whole within this, however its bytes
// are spread: control requests are a few hundred bytes sent at once. A client that trickles them holds one server
// thread for this long and no longer.
constexpr auto kRequestDeadline = std::chrono::seconds(5);
// The answer must be taken by the client within this (a client that stops reading holds a thread no longer).
constexpr auto kAnswerDeadline = std::chrono::seconds(10);

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

http::Reply internal_error(const std::string& reason) {
  http::Reply reply;
  reply.status = 500;
  reply.content_type = http::kTextType;
  reply.body = "internal error: " + reason + "\n";
  return reply;
}

// The handler's answer to a request Poco parsed, through Poco's response (which leaves the body out for HEAD).
void send_reply(Poco::Net::HTTPServerResponse& response, const http::Reply& reply) {
  http::set_reply_fields(response, reply);
  response.sendBuffer(reply.body.data(), reply.body.size());
}

// An answer to a request that could not be read (so there is no request object to answer through): a JSON
// reason, since the path it was for may be unknown and /api clients read every failure as JSON.
void send_refusal(Poco::Net::StreamSocket& socket, int status, const std::string& reason) {
  http::Reply reply;
  reply.status = status;
  reply.content_type = http::kJsonType;
  reply.body = http::json_error(strings::printable(reason));
  http::write_reply(socket, reply);
}

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

// One accepted connection, one request: on a TLS port the handshake first, counted and dropped when it fails (a
// plain HTTP client, a wrong CA on the client side, a scanner); then the request, read whole within
// kRequestDeadline (a deadline on the whole, not on each read); then the handler, and the answer. Not Poco's
// HTTPServerConnection: it would answer what its parser refuses with an empty 400, hand a failed handshake to its
// global error handler unseen, and time out each read alone, so a byte every few seconds kept a thread forever.
class Connection : public Poco::Net::TCPServerConnection {
 public:
  Connection(const Poco::Net::StreamSocket& socket, Poco::Net::HTTPServerParams::Ptr params, const http::Handler& handler,
             const http::AccessCheck& access, bool tls, HandshakeFailureLog& failures, http::RequestDeadlines& deadlines,
             http::PendingReplies& pending)
      : TCPServerConnection(socket),
        params_(params),
        handler_(handler),
        access_(access),
        tls_(tls),
        failures_(failures),
        deadlines_(deadlines),
        pending_(pending) {}

  void run() override {
    try {
      serve();
    } catch (...) {
      // The client went away mid-request or mid-answer (or the server is stopping): nothing to answer.
    }
  }

 private:
  void serve() {
    const int fd = socket().impl()->sockfd();
    // Shut down for reading when it passes: a read in progress ends, and the 408 can still be sent.
    http::RequestDeadlines::Watch request_watch = deadlines_.watch(fd, kRequestDeadline, SHUT_RD);
    if (tls_ && !handshake()) return;
    Poco::Net::HTTPServerSession session(socket(), params_);
    Poco::Net::HTTPServerResponseImpl response(session);
    std::optional<Poco::Net::HTTPServerRequestImpl> request;
    http::Request parsed;
    try {
      request.emplace(response, session, params_.get());
      parsed = read_request(*request);
    } catch (const Poco::Net::NoMessageException&) {
      if (request_watch.expired()) access_.count_deadline_refusal();
      return;  // closed (or idle until its deadline) before sending anything: nobody to answer
    } catch (const Poco::Net::MessageException& error) {
      if (request_watch.expired()) return refuse_late();
      access_.count_malformed_refusal();
      return send_refusal(socket(), 400, "malformed request: " + error.message());
    } catch (const Poco::TimeoutException&) {
      return refuse_late();
    }
    if (request_watch.expired()) return refuse_late();
    request_watch.release();

    http::Reply reply;
    try {
      if (request->getExpectContinue()) response.sendContinue();
      reply = handler_(parsed, access_);
    } catch (const Poco::Exception& error) {
      reply = internal_error(error.displayText());
    } catch (const std::exception& error) {
      reply = internal_error(error.what());
    } catch (...) {
      reply = internal_error("unknown exception");
    }
    if (reply.pending != nullptr) {
      // The answer comes later (a wait): the connection leaves this thread for the parked ones. Detached from the
      // session first, whose end would close it.
      pending_.park(session.detachSocket(), std::move(reply.pending));
      return;
    }
    const http::RequestDeadlines::Watch answer_watch = deadlines_.watch(fd, kAnswerDeadline, SHUT_RDWR);
    response.setVersion(request->getVersion());
    response.setKeepAlive(false);
    response.set("Server", params_->getSoftwareVersion());
    send_reply(response, reply);
  }

  void refuse_late() {
    access_.count_deadline_refusal();
    send_refusal(socket(), 408,
                 "request not received whole within " + std::to_string(kRequestDeadline.count()) + " s");
  }

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
  const http::Handler& handler_;
  const http::AccessCheck& access_;
  bool tls_;
  HandshakeFailureLog& failures_;
  http::RequestDeadlines& deadlines_;
  http::PendingReplies& pending_;
};

class ConnectionFactory : public Poco::Net::TCPServerConnectionFactory {
 public:
  ConnectionFactory(Poco::Net::HTTPServerParams::Ptr params, const http::Handler& handler,
                    const http::AccessCheck& access, bool tls, http::RequestDeadlines& deadlines,
                    http::PendingReplies& pending)
      : params_(params), handler_(handler), access_(access), tls_(tls), deadlines_(deadlines), pending_(pending) {}
  Poco::Net::TCPServerConnection* createConnection(const Poco::Net::StreamSocket& socket) override {
    return new Connection(socket, params_, handler_, access_, tls_, failures_, deadlines_, pending_);
  }

 private:
  Poco::Net::HTTPServerParams::Ptr params_;
  const http::Handler& handler_;
  const http::AccessCheck& access_;
  bool tls_;
  HandshakeFailureLog failures_;
  http::RequestDeadlines& deadlines_;
  http::PendingReplies& pending_;
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
  Impl(Handler handler_function, const std::string& host, std::uint16_t wanted_port, unsigned threads,
       const ControlServerSecurity& security)
      : handler(std::move(handler_function)),
        access(AccessRules{security.token, security.reads_need_token}),
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
    // Connections past the threads wait here; past this many they are closed at once (a flood costs a descriptor
    // each for a moment, never memory that grows).
    params->setMaxQueued(64);
    // A kept-alive connection holds one of the few server threads while idle (a status page refreshing every
    // 2 s would hold it for good); control traffic is a request every few seconds, so close after each answer.
    params->setKeepAlive(false);
    // Each read and write alone; the whole request and the whole answer have their deadlines (kRequestDeadline,
    // kAnswerDeadline), so a client that stalls or trickles holds a thread for seconds at most.
    params->setTimeout(Poco::Timespan(std::chrono::duration_cast<std::chrono::seconds>(kRequestDeadline).count(), 0));
    params->setSoftwareVersion("daqx");
    const bool tls = !security.certificate_file.empty();
    server = std::make_unique<Poco::Net::TCPServer>(
        new ConnectionFactory(params, this->handler, access, tls, deadlines, pending), thread_pool, socket, params);
  }

  std::mutex mutex;  // start and stop may come from different threads (signal handler thread, main)
  bool started = false;
  bool stopped = false;
  std::uint16_t port = 0;
  // Before the server: its connections use these until they end.
  Handler handler;
  http::AccessCheck access;
  RequestDeadlines deadlines;
  PendingReplies pending;
  Poco::Net::ServerSocket socket;
  Poco::ThreadPool thread_pool;                   // declared before the server: it must outlive it
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
  impl_->deadlines.expire_all();  // requests still being read end now
  impl_->thread_pool.joinAll();
  impl_->pending.stop();  // after the request threads, which may still park a wait: each is answered now
  impl_->socket.close();  // frees the port at once, for an executive restarted on it
}

std::uint16_t HttpServer::port() const noexcept { return impl_->port; }
const AccessCheck& HttpServer::access() const noexcept { return impl_->access; }

}  // namespace http
}  // namespace daqx
