// Blocking HTTP requests to an executive's control API with Poco::Net, every failure turned into a reply.
#include "daqx/executive/control_client.hpp"

#include <Poco/Exception.h>
#include <Poco/Net/HTTPClientSession.h>
#include <Poco/Net/HTTPRequest.h>
#include <Poco/Net/HTTPResponse.h>
#include <Poco/StreamCopier.h>
#include <Poco/URI.h>

#include <sstream>
#include <stdexcept>

namespace daqx {

ControlClient::ControlClient(const std::string& url, std::chrono::milliseconds timeout) : url_(url), timeout_(timeout) {
  Poco::URI uri(url);
  if (uri.getScheme() != "http" || uri.getHost().empty() || uri.getPort() == 0)
    throw std::invalid_argument("not a context URL (http://host:port): '" + url + "'");
  host_ = uri.getHost();
  port_ = uri.getPort();
}

HttpReply ControlClient::get(const std::string& path) const { return request("GET", path, ""); }
HttpReply ControlClient::post(const std::string& path, const std::string& json_body) const {
  return request("POST", path, json_body);
}

HttpReply ControlClient::request(const std::string& method, const std::string& path, const std::string& body) const {
  HttpReply reply;
  try {
    Poco::Net::HTTPClientSession session(host_, port_);
    session.setTimeout(Poco::Timespan(static_cast<long>(timeout_.count() / 1000), static_cast<long>(timeout_.count() % 1000) * 1000));
    Poco::Net::HTTPRequest request(method, path, Poco::Net::HTTPMessage::HTTP_1_1);
    if (!body.empty()) {
      request.setContentType("application/json");
      request.setContentLength(static_cast<std::streamsize>(body.size()));
    }
    std::ostream& out = session.sendRequest(request);
    out << body;
    Poco::Net::HTTPResponse response;
    std::istream& in = session.receiveResponse(response);
    std::ostringstream text;
    Poco::StreamCopier::copyStream(in, text);
    reply.status = static_cast<int>(response.getStatus());
    reply.body = text.str();
  } catch (const Poco::Exception& e) {
    reply.status = 0;
    reply.body = e.displayText();
  } catch (const std::exception& e) {
    reply.status = 0;
    reply.body = e.what();
  }
  return reply;
}

}  // namespace daqx
