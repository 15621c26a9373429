// Fuzz target: the control server's request framing (executive/control/src/request_framing.cpp), what decides where
// a request's head and chunked body end and which limits refuse it. The input is the bytes a client sends; the
// first byte says how the chunked body's bytes are split into feeds (the network splits them anywhere).
// Properties: a head is complete only with a blank line inside the bytes, within the limits (request line at most
// kMaxRequestLine, fields at most kMaxHeaderSection and kMaxHeaderFields); refused only with 400, 414 or 431 and a
// reason of one printable line; incomplete never past the limits and never at the end of the bytes; a refusal at
// the end of the bytes says cut off. A chunked body is never larger than its limit, decodes the same however its
// bytes are split.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "request_framing.hpp"

namespace {

using daqx::http::ChunkedBody;
using daqx::http::HeadScan;

[[noreturn]] void fail(const char* what, std::string_view bytes) {
  std::fprintf(stderr, "request_framing_fuzz: %s\n  input of %zu bytes: %.200s\n", what, bytes.size(),
               std::string(bytes).c_str());
  std::abort();
}

constexpr std::size_t kMaxBody = 4096;  // small, so the fuzzer reaches the limit

struct Decoded {
  ChunkedBody::Outcome outcome;
  std::string body;
};

Decoded decode(std::string_view bytes, std::size_t piece) {
  ChunkedBody body(kMaxBody);
  ChunkedBody::Outcome outcome = ChunkedBody::Outcome::incomplete;
  for (std::size_t at = 0; at < bytes.size() && outcome == ChunkedBody::Outcome::incomplete; at += piece)
    outcome = body.feed(bytes.substr(at, piece));
  if (bytes.empty()) outcome = body.feed({});
  return {outcome, body.body()};
}

void check_head(std::string_view bytes, bool ended) {
  using Outcome = HeadScan::Outcome;
  const HeadScan scan = daqx::http::scan_request_head(bytes, ended);
  switch (scan.outcome) {
    case Outcome::complete: {
      if (scan.length == 0 || scan.length > bytes.size()) fail("a head longer than the bytes", bytes);
      const std::string_view head = bytes.substr(0, scan.length);
      if (!head.ends_with("\n\n") && !head.ends_with("\n\r\n")) fail("a complete head without its blank line", bytes);
      const std::size_t line = head.find('\n');
      if (line > daqx::http::kMaxRequestLine + 1) fail("a request line past its limit taken", bytes);
      if (scan.length - line - 1 > daqx::http::kMaxHeaderSection + 2) fail("header fields past their limit taken", bytes);
      break;
    }
    case Outcome::refused:
      if (scan.status != 400 && scan.status != 414 && scan.status != 431) fail("a refusal with another status", bytes);
      if (scan.reason.empty()) fail("a refusal without a reason", bytes);
      for (char c : scan.reason)
        if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f) fail("a reason not printable", bytes);
      break;
    case Outcome::incomplete:
      if (ended) fail("a head left incomplete at the end of the bytes", bytes);
      if (bytes.size() > daqx::http::kMaxRequestLine + daqx::http::kMaxHeaderSection + 2)
        fail("a head past every limit still incomplete", bytes);
      break;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::size_t piece = 1 + data[0] % 17;
  const std::string_view bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  if (!bytes.empty()) check_head(bytes, true);
  check_head(bytes, false);

  const Decoded whole = decode(bytes, bytes.size() + 1);
  const Decoded split = decode(bytes, piece);
  if (whole.outcome != split.outcome) fail("a chunked body decoded differently when split", bytes);
  if (whole.outcome == ChunkedBody::Outcome::complete) {
    if (whole.body != split.body) fail("a chunked body differs when split", bytes);
    if (whole.body.size() > kMaxBody) fail("a chunked body past its limit", bytes);
  }
  return 0;
}
