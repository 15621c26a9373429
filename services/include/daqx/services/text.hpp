// Small text helpers shared by the partition parser, the parameter checks, messages, logs and /metrics.
#pragma once

#include <algorithm>
#include <cstddef>
#include <initializer_list>
#include <string>
#include <string_view>

namespace daqx::strings {

inline char lower(char c) noexcept { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

inline bool equals_ignoring_case(std::string_view a, std::string_view b) noexcept {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (lower(a[i]) != lower(b[i])) return false;
  return true;
}

inline std::string_view trim(std::string_view text) noexcept {
  constexpr std::string_view blanks = " \t\r\n";
  const std::size_t first = text.find_first_not_of(blanks);
  if (first == std::string_view::npos) return {};
  const std::size_t last = text.find_last_not_of(blanks);
  return text.substr(first, last - first + 1);
}

// Builds a message from its parts: chains of `"literal" + std::string` trip a false -Wrestrict in GCC 12
// (bug 105329).
inline std::string concatenate(std::initializer_list<std::string_view> parts) {
  std::string text;
  for (std::string_view part : parts) text += part;
  return text;
}

// Length of the well-formed UTF-8 sequence at text[i] (RFC 3629: no overlong forms, no surrogates, nothing
// past U+10FFFF), or 0 when the bytes there are not one.
inline std::size_t utf8_sequence(std::string_view text, std::size_t i) noexcept {
  const auto at = [&](std::size_t k) { return static_cast<unsigned char>(text[i + k]); };
  const auto continuation = [&](std::size_t k) { return i + k < text.size() && (at(k) & 0xc0) == 0x80; };
  const unsigned char lead = at(0);
  if (lead < 0x80) return 1;
  if (lead >= 0xc2 && lead <= 0xdf) return continuation(1) ? 2 : 0;
  if (lead >= 0xe0 && lead <= 0xef) {
    if (!continuation(1) || !continuation(2)) return 0;
    if (lead == 0xe0 && at(1) < 0xa0) return 0;   // overlong
    if (lead == 0xed && at(1) >= 0xa0) return 0;  // UTF-16 surrogates
    return 3;
  }
  if (lead >= 0xf0 && lead <= 0xf4) {
    if (!continuation(1) || !continuation(2) || !continuation(3)) return 0;
    if (lead == 0xf0 && at(1) < 0x90) return 0;   // overlong
    if (lead == 0xf4 && at(1) >= 0x90) return 0;  // past U+10FFFF
    return 4;
  }
  return 0;
}

// The text with every byte that is not part of well-formed UTF-8 replaced by U+FFFD (one per byte), for
// formats that must be UTF-8 whatever an application handed in (Prometheus label values).
inline std::string valid_utf8(std::string_view text) {
  std::string valid;
  valid.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t length = utf8_sequence(text, i);
    if (length == 0) {
      valid += "\xef\xbf\xbd";
      ++i;
    } else {
      valid.append(text.substr(i, length));
      i += length;
    }
  }
  return valid;
}

// Text from outside (a partition, a request, a file) quoted in a message is cut after this many of its bytes: a
// message quoting a 40 kB request line or a damaged file stays a line a reader can take in.
inline constexpr std::size_t kQuotedBytes = 200;

// Text from outside (a partition, a request) made fit for a one-line message: line breaks, tabs, other control
// characters and bytes that are not UTF-8 written as escapes (\n, \t, \r, \xHH), so that the message stays one
// readable line of UTF-8 whatever the text held. Past `limit` bytes of `text` the rest is left out and the cut
// said ("... (N bytes in all)"), never inside a UTF-8 sequence.
inline std::string printable(std::string_view text, std::size_t limit = std::string_view::npos) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(std::min(text.size(), limit));
  std::size_t i = 0;
  while (i < text.size() && i < limit) {
    const std::size_t length = utf8_sequence(text, i);
    const auto c = static_cast<unsigned char>(text[i]);
    if (length > 1 || (length == 1 && c >= 0x20 && c != 0x7f)) {
      out.append(text.substr(i, length));
      i += length;
      continue;
    }
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\r') {
      out += "\\r";
    } else {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 0xf];
    }
    ++i;
  }
  if (i < text.size()) out += concatenate({"... (", std::to_string(text.size()), " bytes in all)"});
  return out;
}

// Outside text in single quotes, printable and cut after kQuotedBytes: 'text'. What every message uses to quote
// bytes it did not write itself.
inline std::string quoted(std::string_view text) {
  return concatenate({"'", printable(text, kQuotedBytes), "'"});
}

}  // namespace daqx::strings
