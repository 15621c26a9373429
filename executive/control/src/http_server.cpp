// The HTTP side of the control server and of daqx-launch's dashboard: Poco's server, the listening socket (plain
// or TLS), and reading requests for the routes.
#include "http_server.hpp"

#include <algorithm>
#include <sstream>
#include <string_view>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <system_error>

#include <Poco/Exception.h>
#include <Poco/Net/HTTPRequest.h>
#include <Poco/Net/HTTPServerParams.h>
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
#include "stream_writer.hpp"
#include "reply_writer.hpp"
#include "request_deadlines.hpp"
#include "request_framing.hpp"
#include "tls_context.hpp"

namespace daqx {
namespace {

// After a refusal (413, 414, 431, ...) what the client still sends is read and dropped up to this, so that it
// still gets its answer: closing with unread data would reset the connection and lose the answer.
constexpr std::size_t kMaxDrainedBody = 64u << 20;

// A request (TLS handshake, request line, header fields and body) must arrive whole within this, however its bytes
// are spread: control requests are a few hundred bytes sent at once. A client that trickles them holds one server
// thread for this long and no longer.
constexpr auto kRequestDeadline = std::chrono::seconds(5);
// The answer must be taken by the client within this (a client that stops reading holds a thread no longer).
constexpr auto kAnswerDeadline = std::chrono::seconds(10);

http::Reply internal_error(const std::string& reason) {
  http::Reply reply;
  reply.status = 500;
  reply.content_type = http::kTextType;
  reply.body = "internal error: " + reason + "\n";
  return reply;
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

// The head of a request, read whole (as scan_request_head frames it) and parsed by Poco: method, target and the
// fields the routes read, or the reason it is refused.
struct ParsedHead {
  Poco::Net::HTTPRequest request;
  int status = 0;  // refused: 400
  std::string reason;
};

ParsedHead parse_head(std::string_view head) {
  ParsedHead parsed;
  std::istringstream text{std::string(head)};
  try {
    parsed.request.read(text);
  } catch (const Poco::Exception& error) {
    parsed.status = 400;
    parsed.reason = "malformed request: " + strings::printable(error.message(), strings::kQuotedBytes);
  }
  return parsed;
}

// One accepted connection, one request: on a TLS port the handshake first, counted and dropped when it fails (a
// plain HTTP client, a wrong CA on the client side, a scanner); then the request, read whole within
// kRequestDeadline (a deadline on the whole, not on each read) and framed by request_framing.hpp, which holds it
// to its limits (414, 431) and never takes a head or body cut off by the client's end for a whole one (400); then
// the handler, and the answer. Not Poco's HTTPServerConnection: it would answer what its parser refuses with an
// empty 400, take a head cut off inside a field line for a whole one, hand a failed handshake to its global error
// handler unseen, and time out each read alone, so a byte every few seconds kept a thread forever.
class Connection : public Poco::Net::TCPServerConnection {
 public:
  Connection(const Poco::Net::StreamSocket& socket, Poco::Net::HTTPServerParams::Ptr params, const http::Handler& handler,
             const http::AccessCheck& access, bool tls, HandshakeFailureLog& failures, http::RequestDeadlines& deadlines,
             http::PendingReplies& pending, http::StreamWriter& streams)
      : TCPServerConnection(socket),
        params_(params),
        handler_(handler),
        access_(access),
        tls_(tls),
        failures_(failures),
        deadlines_(deadlines),
        pending_(pending),
        streams_(streams) {}

  void run() override {
    try {
      serve();
    } catch (...) {
      // The client went away mid-request or mid-answer (or the server is stopping): nothing to answer.
    }
  }

 private:
  // What reading more of the request gave.
  enum class Received { more, ended, late };

  void serve() {
    const int fd = socket().impl()->sockfd();
    // Shut down for reading when it passes: a read in progress ends, and the 408 can still be sent.
    http::RequestDeadlines::Watch request_watch = deadlines_.watch(fd, kRequestDeadline, SHUT_RD);
    if (tls_ && !handshake()) return;
    socket().setReceiveTimeout(params_->getTimeout());
    socket().setSendTimeout(params_->getTimeout());

    std::string received;
    http::HeadScan head;
    for (bool ended = false;;) {
      head = http::scan_request_head(received, ended);
      if (head.outcome != http::HeadScan::Outcome::incomplete) break;
      const Received got = receive(received, request_watch);
      if (got == Received::late) return received.empty() ? access_.count_deadline_refusal() : refuse_late();
      if (got == Received::ended) {
        if (received.empty()) return;  // closed before sending anything: nobody to answer
        ended = true;
      }
    }
    if (head.outcome == http::HeadScan::Outcome::refused) return refuse(head.status, head.reason, request_watch);
    ParsedHead parsed_head = parse_head(std::string_view(received).substr(0, head.length));
    if (parsed_head.status != 0) return refuse(parsed_head.status, parsed_head.reason, request_watch);
    received.erase(0, head.length);

    http::Request parsed;
    const Poco::Net::HTTPRequest& request = parsed_head.request;
    parsed.method = request.getMethod();
    parsed.target = request.getURI();
    parsed.authorization = request.get(Poco::Net::HTTPRequest::AUTHORIZATION, "");
    if (read_body(request, received, parsed, request_watch) == Received::late) return refuse_late();
    // A body refused unread is dropped after the answer (drain()), so that the client still gets it.
    const bool unread_body = parsed.body_too_large || !parsed.framing_error.empty();
    if (request_watch.expired()) return refuse_late();

    http::Reply reply;
    try {
      reply = handler_(parsed, access_);
    } catch (const Poco::Exception& error) {
      reply = internal_error(error.displayText());
    } catch (const std::exception& error) {
      reply = internal_error(error.what());
    } catch (...) {
      reply = internal_error("unknown exception");
    }
    if (reply.pending != nullptr) {
      // The answer comes later (a wait): the connection leaves this thread for the parked ones.
      request_watch.release();
      pending_.park(socket(), std::move(reply.pending));
      return;
    }
    if (reply.stream != nullptr) {
      // A stream: the connection leaves this thread for the stream writer, which writes the answer.
      request_watch.release();
      streams_.adopt(socket(), std::move(reply.stream));
      return;
    }
    if (!unread_body) request_watch.release();
    const http::RequestDeadlines::Watch answer_watch = deadlines_.watch(fd, kAnswerDeadline, SHUT_RDWR);
    http::write_reply(socket(), reply, parsed.method != "HEAD");
    if (unread_body) drain();
  }

  // Appends what the client sent next to `into`.
  Received receive(std::string& into, const http::RequestDeadlines::Watch& watch) {
    char buffer[16384];
    int count = 0;
    try {
      count = socket().receiveBytes(buffer, sizeof buffer);
    } catch (const Poco::TimeoutException&) {
      return Received::late;
    }
    if (count <= 0) return watch.expired() ? Received::late : Received::ended;
    into.append(buffer, static_cast<std::size_t>(count));
    return Received::more;
  }

  // The body as the head frames it (RFC 9112 6.3): Content-Length bytes, or chunked, or none. `received` holds
  // what came after the head. Limits and framing faults are recorded in `parsed` for the routes to answer.
  Received read_body(const Poco::Net::HTTPRequest& request, std::string& received, http::Request& parsed,
                     const http::RequestDeadlines::Watch& watch) {
    const bool chunked = request.has(Poco::Net::HTTPMessage::TRANSFER_ENCODING);
    const bool has_length = request.hasContentLength();
    if (chunked && has_length) {
      parsed.framing_error = "both Content-Length and Transfer-Encoding: the body's length is ambiguous";
      return Received::ended;
    }
    if (chunked && !request.getChunkedTransferEncoding()) {
      parsed.framing_error = "Transfer-Encoding " + strings::quoted(request.get(Poco::Net::HTTPMessage::TRANSFER_ENCODING)) +
                             " is not supported: send chunked, or a Content-Length";
      return Received::ended;
    }
    const bool expect_continue = request.getExpectContinue();
    if (chunked) return read_chunked(received, parsed, watch, expect_continue);
    // Without a length or chunking a request has no body.
    if (!has_length) return Received::ended;
    std::int64_t length = -1;
    try {
      length = request.getContentLength64();
    } catch (const Poco::Exception&) {
    }
    if (length < 0) {
      parsed.framing_error = "bad Content-Length: " + strings::quoted(request.get(Poco::Net::HTTPMessage::CONTENT_LENGTH));
      return Received::ended;
    }
    if (length > static_cast<std::int64_t>(http::kMaxRequestBody)) {
      parsed.body_too_large = true;
      return Received::ended;
    }
    const auto wanted = static_cast<std::size_t>(length);
    if (received.size() < wanted) continue_if_expected(expect_continue);
    while (received.size() < wanted) {
      const Received got = receive(received, watch);
      if (got == Received::late) return got;
      if (got == Received::ended) break;
    }
    if (received.size() < wanted) {
      parsed.body_incomplete = true;
    } else {
      received.resize(wanted);
      parsed.body = std::move(received);
    }
    return Received::ended;
  }

  Received read_chunked(std::string& received, http::Request& parsed, const http::RequestDeadlines::Watch& watch,
                        bool expect_continue) {
    http::ChunkedBody body(http::kMaxRequestBody);
    using Outcome = http::ChunkedBody::Outcome;
    Outcome outcome = body.feed(received);
    if (outcome == Outcome::incomplete) continue_if_expected(expect_continue);
    while (outcome == Outcome::incomplete) {
      std::string more;
      const Received got = receive(more, watch);
      if (got == Received::late) return got;
      if (got == Received::ended) {
        parsed.body_incomplete = true;
        return got;
      }
      outcome = body.feed(more);
    }
    if (outcome == Outcome::complete) parsed.body = std::move(body.body());
    if (outcome == Outcome::too_large) parsed.body_too_large = true;
    if (outcome == Outcome::malformed) parsed.framing_error = "malformed chunked body: " + body.reason();
    return Received::ended;
  }

  // "Expect: 100-continue": the client waits for this before sending its body.
  void continue_if_expected(bool expected) {
    if (!expected) return;
    constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
    socket().sendBytes(kContinue.data(), static_cast<int>(kContinue.size()));
  }

  // A request refused before it was read whole: its answer, then what the client still sends is dropped.
  void refuse(int status, const std::string& reason, const http::RequestDeadlines::Watch& watch) {
    access_.count_malformed_refusal();
    send_refusal(socket(), status, reason);
    if (!watch.expired()) drain();
  }

  // After an answer sent with bytes of the request still unread: the sending side is shut down (the client sees
  // the answer end), then what the client still sends is read and dropped until it closes, for kMaxDrainedBody
  // bytes and the request's deadline at most. Closing with unread bytes would reset the connection, and the client
  // would lose the answer.
  void drain() {
    ::shutdown(socket().impl()->sockfd(), SHUT_WR);
    char buffer[16384];
    std::size_t total = 0;
    try {
      while (total < kMaxDrainedBody) {
        const int count = socket().receiveBytes(buffer, sizeof buffer);
        if (count <= 0) break;
        total += static_cast<std::size_t>(count);
      }
    } catch (const Poco::Exception&) {
      // reset, or its deadline passed: done with it either way
    }
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
  http::StreamWriter& streams_;
};

class ConnectionFactory : public Poco::Net::TCPServerConnectionFactory {
 public:
  ConnectionFactory(Poco::Net::HTTPServerParams::Ptr params, const http::Handler& handler,
                    const http::AccessCheck& access, bool tls, http::RequestDeadlines& deadlines,
                    http::PendingReplies& pending, http::StreamWriter& streams)
      : params_(params), handler_(handler), access_(access), tls_(tls), deadlines_(deadlines), pending_(pending),
        streams_(streams) {}
  Poco::Net::TCPServerConnection* createConnection(const Poco::Net::StreamSocket& socket) override {
    return new Connection(socket, params_, handler_, access_, tls_, failures_, deadlines_, pending_, streams_);
  }

 private:
  Poco::Net::HTTPServerParams::Ptr params_;
  const http::Handler& handler_;
  const http::AccessCheck& access_;
  bool tls_;
  HandshakeFailureLog failures_;
  http::RequestDeadlines& deadlines_;
  http::PendingReplies& pending_;
  http::StreamWriter& streams_;
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
        new ConnectionFactory(params, this->handler, access, tls, deadlines, pending, streams), thread_pool, socket, params);
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
  StreamWriter streams;
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
  impl_->streams.stop();  // after them too: a stream handed over now ends at once
  impl_->socket.close();  // frees the port at once, for an executive restarted on it
}

std::uint16_t HttpServer::port() const noexcept { return impl_->port; }
const AccessCheck& HttpServer::access() const noexcept { return impl_->access; }

}  // namespace http
}  // namespace daqx
