// The strict number syntax of daqx and the wording of its refusals (number_text.hpp).
#include "daqx/services/number_text.hpp"

#include <charconv>
#include <cmath>
#include <system_error>

#include "daqx/services/text.hpp"

namespace daqx::numbers {
namespace {

using strings::concatenate;
using strings::quoted;

constexpr std::string_view kUnsigned = "an unsigned integer";
constexpr std::string_view kSigned = "an integer";
constexpr std::string_view kReal = "a decimal number";

bool is_digit(char c) noexcept { return c >= '0' && c <= '9'; }
bool is_blank(char c) noexcept { return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f'; }

std::string not_a(std::string_view text, std::string_view kind, std::string_view why) {
  return concatenate({quoted(text), " is not ", kind, ": ", why});
}

std::string out_of_range(std::string_view text, std::string_view kind, std::string_view why) {
  return concatenate({quoted(text), " is out of range for ", kind, ": ", why});
}

std::string shown(double bound) {
  char buffer[64];
  const auto [end, error] = std::to_chars(buffer, buffer + sizeof buffer, bound);
  return error == std::errc() ? std::string(buffer, end) : std::to_string(bound);
}

// What every number refuses before its own syntax: the reason, or empty.
std::string_view common_refusal(std::string_view text, bool negative_allowed) noexcept {
  if (text.empty()) return "it is empty";
  if (text.find('\0') != std::string_view::npos) return "it holds a NUL byte";
  if (is_blank(text.front())) return "it starts with a blank";
  if (is_blank(text.back())) return "it ends with a blank, carriage return or line feed";
  if (text.front() == '+') return "a '+' sign is not accepted";
  if (text.front() == '-' && !negative_allowed) return "it is negative";
  return {};
}

// Why text that is no number in integer syntax is refused (digits with an optional leading '-' checked by the
// caller).
std::string_view integer_refusal(std::string_view digits) noexcept {
  if (digits.empty()) return "no digits";
  if (digits.size() > 1 && digits[0] == '0' && (digits[1] == 'x' || digits[1] == 'X'))
    return "only decimal digits are accepted (no 0x)";
  for (char c : digits) {
    if (is_digit(c)) continue;
    if (c == '.' || c == 'e' || c == 'E') return "an integer has no fraction or exponent";
    if (is_blank(c)) return "it holds a blank";
    return "only decimal digits are accepted";
  }
  return {};
}

// -?digits[.digits][(e|E)-?digits], with digits on at least one side of the point.
std::string_view real_refusal(std::string_view text) noexcept {
  std::size_t at = 0;
  const auto digits = [&] {
    const std::size_t start = at;
    while (at < text.size() && is_digit(text[at])) ++at;
    return at - start;
  };
  if (at < text.size() && text[at] == '-') ++at;
  if (text.size() > at + 1 && text[at] == '0' && (text[at + 1] == 'x' || text[at + 1] == 'X'))
    return "only decimal digits are accepted (no 0x)";
  std::size_t mantissa = digits();
  if (at < text.size() && text[at] == '.') {
    ++at;
    mantissa += digits();
  }
  if (mantissa == 0) return "no digits (inf and nan are not numbers here)";
  if (at < text.size() && (text[at] == 'e' || text[at] == 'E')) {
    ++at;
    if (at < text.size() && (text[at] == '-' || text[at] == '+')) ++at;
    if (digits() == 0) return "no digits in its exponent";
  }
  if (at == text.size()) return {};
  if (is_blank(text[at])) return "it holds a blank";
  return "only decimal digits, a point and an exponent are accepted";
}

// The syntax of each kind: the first reason the text is refused, or empty.
std::string_view unsigned_refusal(std::string_view text) noexcept {
  const std::string_view why = common_refusal(text, false);
  return why.empty() ? integer_refusal(text) : why;
}

std::string_view signed_refusal(std::string_view text) noexcept {
  const std::string_view why = common_refusal(text, true);
  return why.empty() ? integer_refusal(text.front() == '-' ? text.substr(1) : text) : why;
}

std::string_view decimal_refusal(std::string_view text) noexcept {
  const std::string_view why = common_refusal(text, true);
  return why.empty() ? real_refusal(text) : why;
}

// An integer of `kind` once its syntax is known (`why`: the refusal of it, or empty): its value or range refusal.
template <typename Integer>
Parsed<Integer> parse_integer(std::string_view text, Integer min, Integer max, std::string_view kind,
                              std::string_view why) {
  Parsed<Integer> parsed;
  if (!why.empty()) {
    parsed.error = not_a(text, kind, why);
    return parsed;
  }
  const auto above = [&] { return out_of_range(text, kind, concatenate({"above the maximum ", std::to_string(max)})); };
  const auto below = [&] { return out_of_range(text, kind, concatenate({"below the minimum ", std::to_string(min)})); };
  Integer value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error == std::errc::result_out_of_range) {
    parsed.error = text.front() == '-' ? below() : above();
  } else if (error != std::errc() || end != text.data() + text.size()) {
    parsed.error = not_a(text, kind, "only decimal digits are accepted");
  } else if (value > max) {
    parsed.error = above();
  } else if (value < min) {
    parsed.error = below();
  } else {
    parsed.value = value;
  }
  return parsed;
}

}  // namespace

Parsed<std::uint64_t> parse_unsigned(std::string_view text, std::uint64_t min, std::uint64_t max) {
  return parse_integer(text, min, max, kUnsigned, unsigned_refusal(text));
}

Parsed<std::int64_t> parse_signed(std::string_view text, std::int64_t min, std::int64_t max) {
  return parse_integer(text, min, max, kSigned, signed_refusal(text));
}

Parsed<double> parse_real(std::string_view text, double min, double max) {
  Parsed<double> parsed;
  if (const std::string_view why = decimal_refusal(text); !why.empty()) {
    parsed.error = not_a(text, kReal, why);
    return parsed;
  }
  double value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value, std::chars_format::general);
  if (error == std::errc::result_out_of_range || (error == std::errc() && !std::isfinite(value))) {
    // Too large, or too close to zero for a double: neither is what was written.
    parsed.error = out_of_range(text, kReal, "beyond what a double holds");
  } else if (error != std::errc() || end != text.data() + text.size()) {
    parsed.error = not_a(text, kReal, "only decimal digits, a point and an exponent are accepted");
  } else if (value > max) {
    parsed.error = out_of_range(text, kReal, concatenate({"above the maximum ", shown(max)}));
  } else if (value < min) {
    parsed.error = out_of_range(text, kReal, concatenate({"below the minimum ", shown(min)}));
  } else {
    parsed.value = value;
  }
  return parsed;
}

}  // namespace daqx::numbers
