// The text helpers that keep messages one readable line of UTF-8 whatever bytes they quote (found by fuzzing the
// partition loader and the control requests: tests/fuzz).
#include <catch2/catch.hpp>

#include "daqx/services/text.hpp"

using daqx::strings::printable;
using daqx::strings::quoted;
using daqx::strings::valid_utf8;

TEST_CASE("printable keeps text and UTF-8 as they are and escapes line breaks, control bytes and stray bytes",
          "[text]") {
  CHECK(printable("plain text, with 'quotes' and \\ backslashes") == "plain text, with 'quotes' and \\ backslashes");
  CHECK(printable("\xc3\xa9t\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80") == "\xc3\xa9t\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");
  CHECK(printable("a\nb\tc\rd") == "a\\nb\\tc\\rd");
  CHECK(printable(std::string("nul\0x\x1b[2J\x7f", 10)) == "nul\\x00x\\x1b[2J\\x7f");
  CHECK(printable("\xff\xfe" "ok" "\xc3") == "\\xff\\xfeok\\xc3");   // not UTF-8, and a sequence cut short
  CHECK(printable("\xed\xa0\x80") == "\\xed\\xa0\\x80");              // a UTF-16 surrogate is not UTF-8
  CHECK(printable("") == "");
}

TEST_CASE("printable is idempotent and its result is always one line of valid UTF-8", "[text]") {
  std::string every_byte;
  for (int c = 0; c < 256; ++c) every_byte += static_cast<char>(c);
  const std::string once = printable(every_byte);
  CHECK(printable(once) == once);
  CHECK(valid_utf8(once) == once);
  for (char c : once) CHECK((static_cast<unsigned char>(c) >= 0x20 && c != 0x7f));
}

TEST_CASE("quoted puts printable text in single quotes", "[text]") {
  CHECK(quoted("frameSize") == "'frameSize'");
  CHECK(quoted("1\xd0\xcf" "0\n") == "'1\\xd0\\xcf0\\n'");
}
