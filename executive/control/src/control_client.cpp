// Blocking HTTP(S) requests to an executive's control API with Poco::Net, every failure turned into a reply.
#include "daqx/control/control_client.hpp"

#include <Poco/Exception.h>
#include <Poco/Net/HTTPClientSession.h>
#include <Poco/Net/HTTPRequest.h>
#include <Poco/Net/HTTPResponse.h>
#include <Poco/Net/HTTPSClientSession.h>
#include <Poco/Net/NetException.h>
#include <Poco/StreamCopier.h>
#include <Poco/URI.h>

#include <memory>
#include <mutex>
#include <sstream>
#include <stdexcept>

#include "daqx/services/text.hpp"
#include "tls_context.hpp"

namespace daqx {
namespace {

std::mutex default_mutex;
ControlAccess default_access;  // guarded by default_mutex

}  // namespace

void set_default_control_access(const ControlAccess& access) {
  std::lock_guard lock(default_mutex);
  default_access = access;
}

ControlAccess default_control_access() {
  std::lock_guard lock(default_mutex);
  return default_access;
}

ControlClient::ControlClient(const std::string& url, std::chrono::milliseconds timeout)
    : ControlClient(url, timeout, default_control_access()) {}

ControlClient::ControlClient(const std::string& url, std::chrono::milliseconds timeout, ControlAccess access)
    : url_(url), timeout_(timeout), access_(std::move(access)) {
  Poco::URI uri(url);
  if ((uri.getScheme() != "http" && uri.getScheme() != "https") || uri.getHost().empty() || uri.getPort() == 0)
    throw std::invalid_argument("not a context URL (http://host:port or https://host:port): " + strings::quoted(url));
  host_ = uri.getHost();
  port_ = uri.getPort();
  tls_ = uri.getScheme() == "https";
}

// What a TLS port does to a plain request: it drops the connection without an HTTP answer (reset, or closed).
std::string ControlClient::plain_to_tls_hint() const {
  return tls_ ? std::string() : std::string(" (if the executive serves TLS, its URL is https://)");
}

HttpReply ControlClient::get(const std::string& path) const { return request("GET", path, ""); }
HttpReply ControlClient::post(const std::string& path, const std::string& json_body) const {
  return request("POST", path, json_body);
}

namespace {

Poco::Timespan timespan_of(std::chrono::milliseconds timeout) {
  return Poco::Timespan(static_cast<long>(timeout.count() / 1000), static_cast<long>(timeout.count() % 1000) * 1000);
}

// Every failure of a request as the reply that says it.
template <typename Step>
HttpReply replied(const std::string& tls_hint, Step&& step) {
  HttpReply reply;
  try {
    step(reply);
  } catch (const Poco::Net::NoMessageException& e) {
    reply.status = 0;
    reply.body = e.displayText() + tls_hint;
  } catch (const Poco::Net::ConnectionResetException& e) {
    reply.status = 0;
    reply.body = e.displayText() + tls_hint;
  } catch (const Poco::TimeoutException& e) {
    reply.status = 0;
    reply.timed_out = true;
    reply.body = e.displayText();
  } catch (const Poco::Exception& e) {
    reply.status = 0;
    reply.body = e.displayText();
  } catch (const std::exception& e) {
    reply.status = 0;
    reply.body = e.what();
  }
  return reply;
}

}  // namespace

SentControlRequest::SentControlRequest(std::unique_ptr<Poco::Net::HTTPClientSession> session, std::string tls_hint,
                                       HttpReply failure)
    : session_(std::move(session)), tls_hint_(std::move(tls_hint)), failure_(std::move(failure)) {}
SentControlRequest::SentControlRequest(SentControlRequest&&) noexcept = default;
SentControlRequest& SentControlRequest::operator=(SentControlRequest&&) noexcept = default;
SentControlRequest::~SentControlRequest() = default;

int SentControlRequest::socket_fd() const noexcept {
  return session_ ? static_cast<int>(session_->socket().impl()->sockfd()) : -1;
}

HttpReply SentControlRequest::receive(std::chrono::milliseconds timeout) {
  if (!session_) return failure_;
  HttpReply reply = replied(tls_hint_, [&](HttpReply& answer) {
    session_->socket().setReceiveTimeout(timespan_of(timeout));
    Poco::Net::HTTPResponse response;
    std::istream& in = session_->receiveResponse(response);
    std::ostringstream text;
    Poco::StreamCopier::copyStream(in, text);
    answer.status = static_cast<int>(response.getStatus());
    answer.body = text.str();
  });
  session_.reset();  // one request per connection
  reply.connected = true;
  return reply;
}

HttpReply SentControlRequest::receive_head(std::chrono::milliseconds timeout, std::istream*& body) {
  body = nullptr;
  if (!session_) return failure_;
  HttpReply reply = replied(tls_hint_, [&](HttpReply& answer) {
    session_->socket().setReceiveTimeout(timespan_of(timeout));
    Poco::Net::HTTPResponse response;
    std::istream& in = session_->receiveResponse(response);
    answer.status = static_cast<int>(response.getStatus());
    if (answer.status == 200) {
      body = &in;
      return;
    }
    std::ostringstream text;
    Poco::StreamCopier::copyStream(in, text);
    answer.body = text.str();
  });
  if (body == nullptr) session_.reset();
  reply.connected = true;
  return reply;
}

SentControlRequest ControlClient::send(const std::string& method, const std::string& path,
                                       const std::string& body) const {
  std::unique_ptr<Poco::Net::HTTPClientSession> session;
  HttpReply failure = replied(plain_to_tls_hint(), [&](HttpReply&) {
    if (tls_)
      session = std::make_unique<Poco::Net::HTTPSClientSession>(host_, port_, http::client_tls_context(access_.ca_file));
    else
      session = std::make_unique<Poco::Net::HTTPClientSession>(host_, port_);
    session->setTimeout(timespan_of(timeout_));
    Poco::Net::HTTPRequest request(method, path, Poco::Net::HTTPMessage::HTTP_1_1);
    if (!access_.token.empty()) request.set(Poco::Net::HTTPRequest::AUTHORIZATION, "Bearer " + access_.token);
    if (!body.empty()) {
      request.setContentType("application/json");
      request.setContentLength(static_cast<std::streamsize>(body.size()));
    }
    std::ostream& out = session->sendRequest(request);
    out << body;
    out.flush();
    if (!out) throw Poco::Net::NetException("could not send the request");
  });
  if (failure.status == 0 && !failure.body.empty()) session.reset();
  return SentControlRequest(std::move(session), plain_to_tls_hint(), std::move(failure));
}

HttpReply ControlClient::request(const std::string& method, const std::string& path, const std::string& body) const {
  return send(method, path, body).receive(timeout_);
}

}  // namespace daqx
