// A Reply as HTTP header fields, and written whole on a socket.
#include "reply_writer.hpp"

#include <sstream>

#include <Poco/Exception.h>

namespace daqx::http {

std::string reason_phrase(int status) {
  using Poco::Net::HTTPResponse;
  // Poco's status enum ends at 511; a cast past its range would be undefined.
  return status <= 511 ? HTTPResponse::getReasonForStatus(static_cast<HTTPResponse::HTTPStatus>(status))
                       : std::string("Error");
}

void set_reply_fields(Poco::Net::HTTPResponse& response, const Reply& reply) {
  response.setStatus(std::to_string(reply.status));
  response.setReason(reason_phrase(reply.status));
  response.setContentType(reply.content_type);
  response.set("Cache-Control", "no-store");
  if (!reply.allow.empty()) response.set("Allow", reply.allow);
  if (!reply.www_authenticate.empty()) response.set("WWW-Authenticate", reply.www_authenticate);
  if (!reply.location.empty()) response.set("Location", reply.location);
}

bool write_reply(Poco::Net::StreamSocket& socket, const Reply& reply, bool with_body) {
  Poco::Net::HTTPResponse head;
  head.setVersion(Poco::Net::HTTPMessage::HTTP_1_1);
  set_reply_fields(head, reply);
  head.setContentLength(static_cast<std::streamsize>(reply.body.size()));
  head.setKeepAlive(false);
  head.set("Server", "daqx");
  std::ostringstream text;
  head.write(text);
  if (with_body) text << reply.body;
  const std::string bytes = text.str();
  try {
    std::size_t sent = 0;
    while (sent < bytes.size()) {
      const int count = socket.sendBytes(bytes.data() + sent, static_cast<int>(bytes.size() - sent));
      if (count <= 0) return false;
      sent += static_cast<std::size_t>(count);
    }
  } catch (const Poco::Exception&) {
    return false;  // reset, closed, or not taken within the send timeout
  }
  return true;
}

}  // namespace daqx::http
