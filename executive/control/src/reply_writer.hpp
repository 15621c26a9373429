// How a Reply becomes an HTTP answer: its header fields, and the whole answer written straight on a socket for the
// answers that do not go through Poco's response object (requests that could not be read, pending replies).
#pragma once

#include <string>

#include <Poco/Net/HTTPResponse.h>
#include <Poco/Net/StreamSocket.h>

#include "control_routes.hpp"

namespace daqx::http {

// Poco's reason phrase for `status`; "Error" past the statuses it knows.
std::string reason_phrase(int status);

// Status, reason, content type and the fields every answer of ours carries (Cache-Control, Allow,
// WWW-Authenticate, Location as the reply has them), on a response Poco will send or one written by write_reply.
void set_reply_fields(Poco::Net::HTTPResponse& response, const Reply& reply);

// Writes `reply` whole (HTTP/1.1, Connection: close, its body unless `with_body` is false: the answer to HEAD) on
// `socket`, which the caller then closes; false when the client went away or did not take it within the socket's
// send timeout.
bool write_reply(Poco::Net::StreamSocket& socket, const Reply& reply, bool with_body = true);

}  // namespace daqx::http
