// Fuzz target: the strict number parser every number that enters daqx is read with (services/number_text). Input:
// which parser, two bounds, and the text. Properties: an answer is a value or a reason, never both; what is accepted
// is the whole text in the documented syntax (decimal digits, '-' only where signed or real, no blank, NUL or '+'),
// within the bounds, and prints back to the same integer; what unsigned accepts, signed and real accept alike;
// every reason is one printable line of UTF-8.
#include <cmath>
#include <cstdlib>
#include <string>
#include <string_view>

#include <fuzzer/FuzzedDataProvider.h>

#include "daqx/services/number_text.hpp"
#include "daqx/services/text.hpp"

namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }

template <typename Number>
void require_answer(const daqx::numbers::Parsed<Number>& parsed, std::string_view text) {
  if (parsed.value.has_value() == !parsed.error.empty()) std::abort();
  if (parsed.value) {
    if (text.empty() || !(is_digit(text.front()) || text.front() == '-' || text.front() == '.')) std::abort();
    if (text.find('\0') != std::string_view::npos || text.find(' ') != std::string_view::npos) std::abort();
    return;
  }
  if (daqx::strings::valid_utf8(parsed.error) != parsed.error) std::abort();
  for (char c : parsed.error)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) std::abort();
}

// An accepted integer is its digits: printed again it is the text without leading zeros.
void require_same_digits(std::string_view text, const std::string& printed) {
  std::string_view digits = text;
  if (!digits.empty() && digits.front() == '-') digits.remove_prefix(1);
  for (char c : digits)
    if (!is_digit(c)) std::abort();
  while (digits.size() > 1 && digits.front() == '0') digits.remove_prefix(1);
  std::string_view shown = printed;
  if (!shown.empty() && shown.front() == '-') shown.remove_prefix(1);
  if (digits != shown) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  FuzzedDataProvider input(data, size);
  const bool bounded = input.ConsumeBool();
  const auto a = input.ConsumeIntegral<std::uint64_t>();
  const auto b = input.ConsumeIntegral<std::uint64_t>();
  const std::string text = input.ConsumeRemainingBytesAsString();

  const auto as_unsigned = bounded ? daqx::numbers::parse_unsigned(text, std::min(a, b), std::max(a, b))
                                   : daqx::numbers::parse_unsigned(text);
  require_answer(as_unsigned, text);
  if (as_unsigned) {
    if (text.front() == '-') std::abort();
    if (bounded && (*as_unsigned < std::min(a, b) || *as_unsigned > std::max(a, b))) std::abort();
    require_same_digits(text, std::to_string(*as_unsigned));
    if (!daqx::numbers::parse_real(text)) std::abort();
    const auto as_signed = daqx::numbers::parse_signed(text);
    const bool fits_signed = *as_unsigned <= static_cast<std::uint64_t>(INT64_MAX);
    if (fits_signed && (!as_signed || static_cast<std::uint64_t>(*as_signed) != *as_unsigned)) std::abort();
  }

  const auto low = static_cast<std::int64_t>(a), high = static_cast<std::int64_t>(b);
  const auto as_signed = bounded ? daqx::numbers::parse_signed(text, std::min(low, high), std::max(low, high))
                                 : daqx::numbers::parse_signed(text);
  require_answer(as_signed, text);
  if (as_signed) {
    if (bounded && (*as_signed < std::min(low, high) || *as_signed > std::max(low, high))) std::abort();
    require_same_digits(text, std::to_string(*as_signed));
    if (*as_signed < 0 && text.front() != '-') std::abort();
  }

  const auto as_real = daqx::numbers::parse_real(text);
  require_answer(as_real, text);
  if (as_real && !std::isfinite(*as_real)) std::abort();
  if (as_real && text.front() == '+') std::abort();
  return 0;
}
