// The strict number syntax every number that enters daqx is read with (partition, control API, command lines, run
// files), and the one wording of its refusals.
#include <catch2/catch.hpp>

#include <cstdint>
#include <limits>
#include <string>

#include "daqx/services/number_text.hpp"

using namespace std::string_literals;
using daqx::numbers::parse;
using daqx::numbers::parse_real;
using daqx::numbers::parse_signed;
using daqx::numbers::parse_unsigned;

namespace {

// Each case: the text and the reason it is refused, whatever kind of number is asked for.
struct Refused {
  std::string text;
  std::string reason;
};

const Refused kRefusedByAll[] = {
    {"", "it is empty"},
    {" 5", "it starts with a blank"},
    {"\t5", "it starts with a blank"},
    {"\n5", "it starts with a blank"},
    {"5 ", "it ends with a blank, carriage return or line feed"},
    {"5\r", "it ends with a blank, carriage return or line feed"},
    {"5\n", "it ends with a blank, carriage return or line feed"},
    {"5\r\n", "it ends with a blank, carriage return or line feed"},
    {"5\0"s, "it holds a NUL byte"},
    {"5\0" "7"s, "it holds a NUL byte"},
    {"\0"s, "it holds a NUL byte"},
    {"+5", "a '+' sign is not accepted"},
    {"0x10", "only decimal digits are accepted (no 0x)"},
    {"0X1F", "only decimal digits are accepted (no 0x)"},
    {"5 5", "it holds a blank"},
    {"12x", ""},
    {"x", ""},
    {"five", ""},
};

}  // namespace

TEST_CASE("a number is its whole text in decimal: blanks, NUL, '+', 0x and trailing bytes are refused with the reason",
          "[numbers]") {
  for (const Refused& refused : kRefusedByAll) {
    INFO("text '" << refused.text << "'");
    const auto as_unsigned = parse_unsigned(refused.text);
    const auto as_signed = parse_signed(refused.text);
    const auto as_real = parse_real(refused.text);
    CHECK_FALSE(as_unsigned);
    CHECK_FALSE(as_signed);
    CHECK_FALSE(as_real);
    CHECK_THAT(as_unsigned.error, Catch::Contains(" is not an unsigned integer: " + refused.reason));
    CHECK_THAT(as_signed.error, Catch::Contains(" is not an integer: " + refused.reason));
    CHECK_THAT(as_real.error, Catch::Contains(" is not a decimal number: " + refused.reason));
  }
}

TEST_CASE("a refusal quotes the text as one printable line", "[numbers]") {
  CHECK(parse_unsigned("5\r").error ==
        "'5\\r' is not an unsigned integer: it ends with a blank, carriage return or line feed");
  CHECK(parse_unsigned("1\0" "2"s).error == "'1\\x002' is not an unsigned integer: it holds a NUL byte");
  CHECK(parse_unsigned("").error == "'' is not an unsigned integer: it is empty");
  CHECK(parse_real("\xff").error == "'\\xff' is not a decimal number: no digits (inf and nan are not numbers here)");
}

TEST_CASE("integers take decimal digits only: no fraction, no exponent, no '-' when unsigned", "[numbers]") {
  CHECK(*parse_unsigned("0") == 0);
  CHECK(*parse_unsigned("200") == 200);
  CHECK(*parse_unsigned("007") == 7);  // leading zeros are decimal, not octal
  CHECK(*parse_unsigned("18446744073709551615") == std::numeric_limits<std::uint64_t>::max());
  CHECK(*parse_signed("-9223372036854775808") == std::numeric_limits<std::int64_t>::min());
  CHECK(*parse_signed("-1") == -1);
  CHECK(*parse_signed("9223372036854775807") == std::numeric_limits<std::int64_t>::max());
  for (const char* exponent : {"1e3", "1E3", "2.0", "1.5", ".5", "5."}) {
    INFO(exponent);
    CHECK(parse_unsigned(exponent).error.ends_with("an integer has no fraction or exponent"));
    CHECK(parse_signed(exponent).error.ends_with("an integer has no fraction or exponent"));
  }
  CHECK(parse_unsigned("-1").error == "'-1' is not an unsigned integer: it is negative");
  CHECK(parse_unsigned("-0").error == "'-0' is not an unsigned integer: it is negative");
  CHECK(parse_signed("-").error == "'-' is not an integer: no digits");
  CHECK(parse_signed("--1").error == "'--1' is not an integer: only decimal digits are accepted");
  CHECK(parse_signed("1-").error == "'1-' is not an integer: only decimal digits are accepted");
}

TEST_CASE("an integer past its type or its bounds is out of range, with the bound", "[numbers]") {
  CHECK(parse_unsigned("18446744073709551616").error ==
        "'18446744073709551616' is out of range for an unsigned integer: above the maximum 18446744073709551615");
  CHECK(parse_unsigned("99999999999999999999999999").error.ends_with("above the maximum 18446744073709551615"));
  CHECK(parse_signed("9223372036854775808").error.ends_with("above the maximum 9223372036854775807"));
  CHECK(parse_signed("-9223372036854775809").error.ends_with("below the minimum -9223372036854775808"));
  CHECK(parse_unsigned("200", 1, 100).error == "'200' is out of range for an unsigned integer: above the maximum 100");
  CHECK(parse_unsigned("0", 1, 100).error == "'0' is out of range for an unsigned integer: below the minimum 1");
  CHECK(*parse_unsigned("100", 1, 100) == 100);
  CHECK(*parse_unsigned("1", 1, 100) == 1);
  CHECK(parse_signed("-5", -4, 4).error == "'-5' is out of range for an integer: below the minimum -4");
  // The range of a narrower type.
  CHECK(*parse<std::uint16_t>("65535") == 65535);
  CHECK(parse<std::uint16_t>("65536").error ==
        "'65536' is out of range for an unsigned integer: above the maximum 65535");
  CHECK(parse<std::uint32_t>("4294967296").error.ends_with("above the maximum 4294967295"));
  CHECK(parse<std::int8_t>("-129").error.ends_with("below the minimum -128"));
  CHECK(*parse<std::int8_t>("-128") == -128);
  CHECK(parse<std::uint32_t>("0", 1).error.ends_with("below the minimum 1"));
}

TEST_CASE("a real is decimal with an optional point and exponent, finite, in its bounds", "[numbers]") {
  CHECK(*parse_real("0") == 0);
  CHECK(*parse_real("2.5") == 2.5);
  CHECK(*parse_real("-2.5") == -2.5);
  CHECK(*parse_real(".5") == 0.5);
  CHECK(*parse_real("5.") == 5.0);
  CHECK(*parse_real("1e3") == 1000);
  CHECK(*parse_real("1E-3") == 0.001);
  CHECK(*parse_real("1e+3") == 1000);  // a sign is accepted in the exponent only
  for (const char* text : {"inf", "-inf", "infinity", "nan", "NaN", ".", "-.", "e5"}) {
    INFO(text);
    CHECK(parse_real(text).error.ends_with("no digits (inf and nan are not numbers here)"));
  }
  CHECK(parse_real("0x1p3").error.ends_with("only decimal digits are accepted (no 0x)"));
  CHECK(parse_real("-0x1p3").error.ends_with("only decimal digits are accepted (no 0x)"));
  CHECK(parse_real("1e").error.ends_with("no digits in its exponent"));
  CHECK(parse_real("1e+").error.ends_with("no digits in its exponent"));
  CHECK(parse_real("1.2.3").error.ends_with("only decimal digits, a point and an exponent are accepted"));
  CHECK(parse_real("1,5").error.ends_with("only decimal digits, a point and an exponent are accepted"));
  CHECK(parse_real("1e999").error == "'1e999' is out of range for a decimal number: beyond what a double holds");
  CHECK(parse_real("-1e999").error.ends_with("beyond what a double holds"));
  CHECK(parse_real("3601", 0, 3600).error == "'3601' is out of range for a decimal number: above the maximum 3600");
  CHECK(parse_real("-0.5", 0, 3600).error == "'-0.5' is out of range for a decimal number: below the minimum 0");
  CHECK(*parse_real("3600", 0, 3600) == 3600);
}

TEST_CASE("what a parser accepts prints back to the same value", "[numbers]") {
  for (std::uint64_t value : {std::uint64_t{0}, std::uint64_t{1}, std::uint64_t{4096},
                              std::numeric_limits<std::uint64_t>::max()}) {
    CHECK(*parse_unsigned(std::to_string(value)) == value);
    if (value <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
      CHECK(*parse_signed(std::to_string(value)) == static_cast<std::int64_t>(value));
  }
}
