// Where an HTTP request's head and chunked body end in the bytes read so far, and the limits the control server
// holds clients to: pure functions of the bytes, so that the server and the fuzz target run the same code.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace daqx::http {

// Control requests are a few hundred bytes; these are generous and still bound what one client can make us hold.
inline constexpr std::size_t kMaxRequestLine = 8192;     // method, target and version: 414 past it
inline constexpr std::size_t kMaxHeaderSection = 16384;  // every header field line together: 431 past it
inline constexpr std::size_t kMaxHeaderFields = 64;      // 431 past it
inline constexpr std::size_t kMaxChunkLine = 1024;       // a chunk's size line, extensions included: 400 past it

struct HeadScan {
  enum class Outcome { incomplete, complete, refused };
  Outcome outcome = Outcome::incomplete;
  std::size_t length = 0;  // complete: the head's bytes, up to and with the blank line that ends it
  int status = 0;          // refused: 400, 414 or 431
  std::string reason;      // refused: one line, quoting nothing the client sent
};

// The head at the start of `bytes` (request line, header fields, blank line; lines end in CRLF or LF).
// `ended`: no more bytes will come (the client closed its side or its deadline passed), so a head that is not
// whole is refused (400: never taken as complete, never executed). `bytes` is not empty when `ended` is set.
HeadScan scan_request_head(std::string_view bytes, bool ended);

// A chunked body (RFC 9112 7.1) decoded as its bytes arrive: each feed() takes the bytes received since the
// last one. Holds at most the body and one chunk's unread bytes.
class ChunkedBody {
 public:
  enum class Outcome { incomplete, complete, too_large, malformed };

  explicit ChunkedBody(std::size_t max_body) : max_body_(max_body) {}

  Outcome feed(std::string_view bytes);
  std::string& body() noexcept { return body_; }  // whole once complete
  const std::string& reason() const noexcept { return reason_; }  // malformed: why

 private:
  enum class Part { size_line, data, data_end, trailer };
  Outcome step();
  Outcome refuse(std::string reason);

  std::size_t max_body_;
  std::string body_;
  std::string pending_;  // received, not yet decoded
  std::size_t received_ = 0;
  Part part_ = Part::size_line;
  std::size_t chunk_left_ = 0;
  std::size_t trailer_bytes_ = 0;
  Outcome outcome_ = Outcome::incomplete;
  std::string reason_;
};

}  // namespace daqx::http
