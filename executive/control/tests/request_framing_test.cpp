// The control server's chunked body decoding (executive/control/src/request_framing.cpp): the same outcome however
// the network splits the bytes, at and around each limit.
#include <catch2/catch.hpp>
#include <cstddef>
#include <string>
#include <string_view>

#include "request_framing.hpp"

namespace {

using daqx::http::ChunkedBody;
using daqx::http::kMaxChunkLine;

ChunkedBody::Outcome decode(std::string_view bytes, std::size_t piece) {
  ChunkedBody body(4096);
  ChunkedBody::Outcome outcome = ChunkedBody::Outcome::incomplete;
  for (std::size_t at = 0; at < bytes.size() && outcome == ChunkedBody::Outcome::incomplete; at += piece)
    outcome = body.feed(bytes.substr(at, piece));
  return outcome;
}

// A size line of `length` bytes before its ending: "1" then blanks, which the decoder allows before extensions.
std::string size_line(std::size_t length, std::string_view ending) {
  std::string bytes(length, ' ');
  bytes[0] = '1';
  bytes.append(ending);
  bytes.append("x\r\n0\r\n\r\n");
  return bytes;
}

}  // namespace

TEST_CASE("A chunk size line is taken up to its limit and refused past it, whole or split anywhere", "[http]") {
  using Outcome = ChunkedBody::Outcome;
  for (std::string_view ending : {std::string_view("\r\n"), std::string_view("\n")}) {
    CAPTURE(ending.size());
    const std::string at_limit = size_line(kMaxChunkLine, ending);
    const std::string past_limit = size_line(kMaxChunkLine + 1, ending);
    for (std::size_t piece : {std::size_t{1}, std::size_t{7}, kMaxChunkLine, kMaxChunkLine + 1, std::size_t{100000}}) {
      CAPTURE(piece);
      CHECK(decode(at_limit, piece) == Outcome::complete);
      CHECK(decode(past_limit, piece) == Outcome::malformed);
    }
  }
}

TEST_CASE("A chunked body's trailer is refused past the header section's limit, whole or split anywhere", "[http]") {
  using Outcome = ChunkedBody::Outcome;
  const std::string field = "X-Trailer: " + std::string(200, 'a') + "\r\n";
  std::string many = "1\r\nx\r\n0\r\n";
  while (many.size() < daqx::http::kMaxHeaderSection + 300) many += field;
  many += "\r\n";
  for (std::size_t piece : {std::size_t{1}, std::size_t{13}, std::size_t{100000}}) {
    CAPTURE(piece);
    CHECK(decode(many, piece) == Outcome::malformed);
    std::string one = "1\r\nx\r\n0\r\n";
    one.append(field).append("\r\n");
    CHECK(decode(one, piece) == Outcome::complete);
  }
}
