// The one reading of a number that enters daqx from outside (a partition, a control request, a command line, a
// run file): the whole text, decimal only, range checked, with one wording of its refusals.
#pragma once

#include <concepts>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

namespace daqx::numbers {

// A number read from text, or the reason it is none, worded as every refusal of a number in daqx is:
// "'<text>' is not an unsigned integer: <why>" or "'<text>' is out of range for <kind>: <why>", the text
// made one printable line (strings::quoted).
template <typename Number>
struct Parsed {
  std::optional<Number> value;
  std::string error;  // empty exactly when value holds a number

  explicit operator bool() const noexcept { return value.has_value(); }
  Number operator*() const { return *value; }
};

// The syntax, strict on purpose so that a number means the same wherever it is written: the whole text is the
// number; decimal digits only (no 0x, no leading blank or trailing blank, carriage return or line feed, no NUL,
// no '+'); '-' only where negative numbers are valid; integers have no fraction or exponent; a real is
// -?digits[.digits][e-?digits] (also .5 and 5.), finite, with no inf, nan or hexadecimal form. Leading zeros
// are decimal ("010" is ten). Bounds are inclusive.
Parsed<std::uint64_t> parse_unsigned(std::string_view text, std::uint64_t min = 0,
                                     std::uint64_t max = std::numeric_limits<std::uint64_t>::max());
Parsed<std::int64_t> parse_signed(std::string_view text, std::int64_t min = std::numeric_limits<std::int64_t>::min(),
                                  std::int64_t max = std::numeric_limits<std::int64_t>::max());
Parsed<double> parse_real(std::string_view text, double min = std::numeric_limits<double>::lowest(),
                          double max = std::numeric_limits<double>::max());

// The same in the range of a narrower integer type (a port as std::uint16_t, a TID as std::uint32_t).
template <std::integral Integer>
Parsed<Integer> parse(std::string_view text, Integer min = std::numeric_limits<Integer>::min(),
                      Integer max = std::numeric_limits<Integer>::max()) {
  Parsed<Integer> narrowed;
  if constexpr (std::is_signed_v<Integer>) {
    Parsed<std::int64_t> wide = parse_signed(text, min, max);
    if (wide) narrowed.value = static_cast<Integer>(*wide);
    narrowed.error = std::move(wide.error);
  } else {
    Parsed<std::uint64_t> wide = parse_unsigned(text, min, max);
    if (wide) narrowed.value = static_cast<Integer>(*wide);
    narrowed.error = std::move(wide.error);
  }
  return narrowed;
}

}  // namespace daqx::numbers
