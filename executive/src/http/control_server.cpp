// The HTTP side of the control server: Poco's server, the listening socket, and reading requests for the routes.
#include "daqx/executive/control_server.hpp"

#include <algorithm>
#include <istream>
#include <mutex>
#include <stdexcept>
#include <system_error>

#include <Poco/Exception.h>
#include <Poco/Net/HTTPRequestHandler.h>
#include <Poco/Net/HTTPRequestHandlerFactory.h>
#include <Poco/Net/HTTPServer.h>
#include <Poco/Net/HTTPServerParams.h>
#include <Poco/Net/HTTPServerRequest.h>
#include <Poco/Net/HTTPServerResponse.h>
#include <Poco/Net/NetException.h>
#include <Poco/Net/ServerSocket.h>
#include <Poco/Net/SocketAddress.h>
#include <Poco/ThreadPool.h>
#include <Poco/Timespan.h>

#include "control_routes.hpp"

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
  explicit RequestHandler(ControlModel& model) : model_(model) {}

  void handleRequest(Poco::Net::HTTPServerRequest& request, Poco::Net::HTTPServerResponse& response) override {
    http::Reply reply;
    try {
      reply = http::handle_request(model_, read_request(request));
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

  ControlModel& model_;
};

class RequestHandlerFactory : public Poco::Net::HTTPRequestHandlerFactory {
 public:
  explicit RequestHandlerFactory(ControlModel& model) : model_(model) {}
  Poco::Net::HTTPRequestHandler* createRequestHandler(const Poco::Net::HTTPServerRequest&) override {
    return new RequestHandler(model_);
  }

 private:
  ControlModel& model_;
};

// The errno text for socket errors ("Address already in use"), Poco's own text for the rest.
std::string listen_failure_reason(const Poco::Exception& error) {
  if (dynamic_cast<const Poco::Net::DNSException*>(&error) == nullptr && error.code() > 0) {
    return std::system_category().message(error.code());
  }
  return error.displayText();
}

}  // namespace

struct ControlServer::Impl {
  Impl(ControlModel& model, const std::string& host, std::uint16_t wanted_port, unsigned threads)
      : thread_pool("daqx-http", 1, static_cast<int>(std::max(threads, 1u))) {
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
    server = std::make_unique<Poco::Net::HTTPServer>(new RequestHandlerFactory(model), thread_pool, socket, params);
  }

  std::mutex mutex;  // start and stop may come from different threads (signal handler thread, main)
  bool started = false;
  bool stopped = false;
  std::uint16_t port = 0;
  Poco::Net::ServerSocket socket;
  Poco::ThreadPool thread_pool;                   // declared before the server: it must outlive it
  std::unique_ptr<Poco::Net::HTTPServer> server;
};

ControlServer::ControlServer(ControlModel& model, const std::string& host, std::uint16_t port, unsigned threads)
    : impl_(std::make_unique<Impl>(model, host, port, threads)) {}

ControlServer::~ControlServer() {
  try {
    stop();
  } catch (...) {
    // Nothing sensible to do in a destructor; the threads are joined by Poco's pool on destruction.
  }
}

void ControlServer::start() {
  std::lock_guard lock(impl_->mutex);
  if (impl_->stopped) throw std::logic_error("ControlServer::start after stop");
  if (impl_->started) return;
  impl_->server->start();
  impl_->started = true;
}

void ControlServer::stop() {
  std::lock_guard lock(impl_->mutex);
  if (impl_->stopped) return;
  impl_->stopped = true;
  impl_->server->stopAll(/*abortCurrent=*/true);
  impl_->thread_pool.joinAll();
  impl_->socket.close();  // frees the port at once, for an executive restarted on it
}

std::uint16_t ControlServer::port() const noexcept { return impl_->port; }

}  // namespace daqx
