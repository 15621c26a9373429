// The ends of a request's head and of a chunked body, with the control server's limits.
#include "request_framing.hpp"

#include <algorithm>

namespace daqx::http {
namespace {

// The raw bytes of a chunked body: its data, size lines and trailer together. A body of tiny chunks is mostly size
// lines; past this the client is not sending a control request.
constexpr std::size_t kMaxChunkedBytes = 64u << 20;

HeadScan refused(int status, std::string reason) {
  HeadScan scan;
  scan.outcome = HeadScan::Outcome::refused;
  scan.status = status;
  scan.reason = std::move(reason);
  return scan;
}

std::string_view without_cr(std::string_view line) {
  if (line.ends_with('\r')) line.remove_suffix(1);
  return line;
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

HeadScan scan_request_head(std::string_view bytes, bool ended) {
  const std::string too_long_line = "request line longer than " + std::to_string(kMaxRequestLine) + " bytes";
  const std::size_t line_end = bytes.find('\n');
  if (line_end == std::string_view::npos) {
    if (bytes.size() > kMaxRequestLine) return refused(414, too_long_line);
    if (ended) return refused(400, "request cut off inside its request line");
    return {};
  }
  const std::string_view request_line = without_cr(bytes.substr(0, line_end));
  if (request_line.size() > kMaxRequestLine) return refused(414, too_long_line);
  if (request_line.empty()) return refused(400, "empty request line");

  const std::string too_large = "request header fields larger than " + std::to_string(kMaxHeaderSection) +
                                " bytes or more than " + std::to_string(kMaxHeaderFields) + " of them";
  const std::size_t fields_start = line_end + 1;
  std::size_t fields = 0;
  for (std::size_t at = fields_start;;) {
    const std::size_t end = bytes.find('\n', at);
    if (end == std::string_view::npos) {
      if (bytes.size() - fields_start > kMaxHeaderSection) return refused(431, too_large);
      // A field line without its line end, or no blank line after the last: the request was cut off.
      if (ended) return refused(400, "request cut off inside its header fields (no blank line ends them)");
      return {};
    }
    if (without_cr(bytes.substr(at, end - at)).empty()) {
      HeadScan scan;
      scan.outcome = HeadScan::Outcome::complete;
      scan.length = end + 1;
      return scan;
    }
    if (end + 1 - fields_start > kMaxHeaderSection || ++fields > kMaxHeaderFields) return refused(431, too_large);
    at = end + 1;
  }
}

ChunkedBody::Outcome ChunkedBody::feed(std::string_view bytes) {
  if (outcome_ != Outcome::incomplete) return outcome_;
  received_ += bytes.size();
  if (received_ > kMaxChunkedBytes) return outcome_ = Outcome::too_large;
  pending_.append(bytes);
  Outcome outcome = Outcome::incomplete;
  // Each step decodes one whole part from the front of pending_ or says more bytes are needed.
  while (outcome == Outcome::incomplete) {
    const std::size_t before = pending_.size();
    const Part part = part_;
    outcome = step();
    if (outcome == Outcome::incomplete && pending_.size() == before && part_ == part) break;  // needs more bytes
  }
  return outcome_ = outcome;
}

ChunkedBody::Outcome ChunkedBody::refuse(std::string reason) {
  reason_ = std::move(reason);
  return Outcome::malformed;
}

// One part from the front of pending_, erased once decoded; incomplete without erasing anything when the part has
// not arrived whole.
ChunkedBody::Outcome ChunkedBody::step() {
  if (part_ == Part::data) {
    const std::size_t take = std::min(chunk_left_, pending_.size());
    body_.append(pending_, 0, take);
    pending_.erase(0, take);
    chunk_left_ -= take;
    if (chunk_left_ == 0) part_ = Part::data_end;
    return Outcome::incomplete;
  }
  if (part_ == Part::data_end) {
    if (pending_.empty() || (pending_[0] == '\r' && pending_.size() < 2)) return Outcome::incomplete;
    const std::size_t ending = pending_.starts_with("\r\n") ? 2 : pending_.starts_with('\n') ? 1 : 0;
    if (ending == 0) return refuse("chunk data longer than its size line says");
    pending_.erase(0, ending);
    part_ = Part::size_line;
    return Outcome::incomplete;
  }
  const std::size_t end = pending_.find('\n');
  if (end == std::string::npos) {
    // Refused as soon as no ending can bring the line within its limit, so that the outcome does not depend on
    // where the network split the bytes: a size line of kMaxChunkLine bytes may still get its "\r\n".
    if (part_ == Part::trailer && pending_.size() > kMaxHeaderSection - trailer_bytes_)
      return refuse("chunked body trailer larger than " + std::to_string(kMaxHeaderSection) + " bytes");
    if (part_ == Part::size_line && (pending_.size() > kMaxChunkLine + 1 ||
                                     (pending_.size() == kMaxChunkLine + 1 && pending_.back() != '\r')))
      return refuse("chunk size line longer than " + std::to_string(kMaxChunkLine) + " bytes");
    return Outcome::incomplete;
  }
  const std::string line(without_cr(std::string_view(pending_).substr(0, end)));
  pending_.erase(0, end + 1);
  if (part_ == Part::trailer) {
    if (line.empty()) return Outcome::complete;
    trailer_bytes_ += end + 1;
    if (trailer_bytes_ > kMaxHeaderSection)
      return refuse("chunked body trailer larger than " + std::to_string(kMaxHeaderSection) + " bytes");
    return Outcome::incomplete;
  }
  if (line.size() > kMaxChunkLine) return refuse("chunk size line longer than " + std::to_string(kMaxChunkLine) + " bytes");
  // The size in hexadecimal, then optional extensions after ';' (ignored), blanks allowed before them.
  std::size_t size = 0;
  std::size_t digits = 0;
  std::size_t at = 0;
  for (; at < line.size() && hex_digit(line[at]) >= 0; ++at, ++digits) {
    size = size * 16 + static_cast<std::size_t>(hex_digit(line[at]));
    if (size > max_body_) return Outcome::too_large;  // also keeps size from overflowing
  }
  while (at < line.size() && (line[at] == ' ' || line[at] == '\t')) ++at;
  if (digits == 0 || (at < line.size() && line[at] != ';')) return refuse("chunk size line is not a hexadecimal size");
  if (body_.size() + size > max_body_) return Outcome::too_large;
  if (size == 0) {
    part_ = Part::trailer;
  } else {
    chunk_left_ = size;
    part_ = Part::data;
  }
  return Outcome::incomplete;
}

}  // namespace daqx::http
