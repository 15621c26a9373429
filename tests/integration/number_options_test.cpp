// The programs' numeric options are read by the strict number syntax every number that enters daqx is read with
// (daqx/services/number_text.hpp): a value that is not the whole text in decimal, or out of range, is refused
// with exit 2 and the option, what it takes and why, before anything starts.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "../support/executive_process.hpp"
#include "../support/process.hpp"

using namespace daqx::test;
using Catch::Contains;

namespace {

// Neighbours of the cases found: hexadecimal, blank-led, trailing blank, carriage return and line feed, '+',
// exponent and fraction, negative, empty, past 64 bits; each with the reason the parser gives.
struct BadNumber {
  std::string text;
  std::string reason;
};

const std::vector<BadNumber> kBadIntegers = {
    {"0x10", "'0x10' is not an unsigned integer: only decimal digits are accepted (no 0x)"},
    {" 16", "' 16' is not an unsigned integer: it starts with a blank"},
    {"16 ", "'16 ' is not an unsigned integer: it ends with a blank, carriage return or line feed"},
    {"16\r", "'16\\r' is not an unsigned integer: it ends with a blank, carriage return or line feed"},
    {"16\n", "'16\\n' is not an unsigned integer: it ends with a blank, carriage return or line feed"},
    {"+16", "'+16' is not an unsigned integer: a '+' sign is not accepted"},
    {"1e1", "'1e1' is not an unsigned integer: an integer has no fraction or exponent"},
    {"16.0", "'16.0' is not an unsigned integer: an integer has no fraction or exponent"},
    {"-16", "'-16' is not an unsigned integer: it is negative"},
    {"", "'' is not an unsigned integer: it is empty"},
    {"18446744073709551616", "'18446744073709551616' is out of range for an unsigned integer: above the maximum"},
};

const std::vector<BadNumber> kBadSeconds = {
    {"0x10", "'0x10' is not a decimal number: only decimal digits are accepted (no 0x)"},
    {" 5", "' 5' is not a decimal number: it starts with a blank"},
    {"5\r", "'5\\r' is not a decimal number: it ends with a blank, carriage return or line feed"},
    {"+5", "'+5' is not a decimal number: a '+' sign is not accepted"},
    {"inf", "'inf' is not a decimal number: no digits (inf and nan are not numbers here)"},
    {"5s", "'5s' is not a decimal number: only decimal digits, a point and an exponent are accepted"},
    {"", "'' is not a decimal number: it is empty"},
};

ProcessResult run(std::vector<std::string> argv) { return run_process(argv, std::chrono::seconds(20)); }

void require_refused(const ProcessResult& result, const std::string& option, const std::string& reason) {
  INFO(result.output);
  CHECK(result.exit_code == 2);
  CHECK_THAT(result.output, Contains(option + " (") && Contains(reason));
}

// Runs `ARGV... OPTION VALUE TAIL...` and requires OPTION refused for the reason the bad number has.
void require_refused(std::vector<std::string> argv, const std::string& option, const BadNumber& bad,
                     const std::vector<std::string>& tail = {}) {
  argv.insert(argv.end(), {option, bad.text});
  argv.insert(argv.end(), tail.begin(), tail.end());
  require_refused(run(argv), option, bad.reason);
}

}  // namespace

TEST_CASE("daqxctl refuses a numeric option that is not a strict decimal number in range, with exit 2 and the reason",
          "[tools][process][numbers]") {
  // An address nothing answers on: a refused option never gets as far as asking.
  const std::vector<std::string> daqxctl = {tool_program("daqxctl"), "--url", "http://127.0.0.1:9"};
  for (const BadNumber& bad : kBadIntegers) {
    SECTION("--app '" + bad.text + "'") { require_refused(daqxctl, "--app", bad, {"status"}); }
    SECTION("--fanout '" + bad.text + "'") { require_refused(daqxctl, "--fanout", bad, {"status"}); }
    SECTION("--run '" + bad.text + "'") { require_refused(daqxctl, "--run", bad, {"enable"}); }
    SECTION("--count '" + bad.text + "'") { require_refused(daqxctl, "--count", bad, {"watch"}); }
  }
  for (const BadNumber& bad : kBadSeconds) {
    SECTION("--timeout '" + bad.text + "'") { require_refused(daqxctl, "--timeout", bad, {"status"}); }
    SECTION("--interval '" + bad.text + "'") { require_refused(daqxctl, "--interval", bad, {"watch"}); }
  }
  SECTION("the bounds of --run and --timeout") {
    require_refused(daqxctl, "--run",
                    {"9007199254740992",
                     "'9007199254740992' is out of range for an unsigned integer: above the maximum 9007199254740991"},
                    {"enable"});
    require_refused(daqxctl, "--timeout", {"0", "'0' is out of range for a decimal number: below the minimum 0.001"},
                    {"status"});
  }
}

TEST_CASE("daqx-launch refuses a numeric option that is not a strict decimal number in range, with exit 2 and the "
          "reason, before it starts anything",
          "[tools][process][numbers]") {
  const std::vector<std::string> launch = {tool_program("daqx-launch")};
  for (const BadNumber& bad : kBadIntegers) {
    SECTION("--fanout '" + bad.text + "'") { require_refused(launch, "--fanout", bad); }
    SECTION("--run-number '" + bad.text + "'") { require_refused(launch, "--run-number", bad); }
  }
  for (const BadNumber& bad : kBadSeconds) {
    SECTION("--run '" + bad.text + "'") { require_refused(launch, "--run", bad); }
    SECTION("--ready-timeout '" + bad.text + "'") { require_refused(launch, "--ready-timeout", bad); }
    SECTION("--transition-timeout '" + bad.text + "'") { require_refused(launch, "--transition-timeout", bad); }
  }
}

TEST_CASE("daqx-executive refuses an --inbox that is not a strict decimal power of two, with exit 2 and the reason",
          "[executive][process][numbers]") {
  const std::vector<std::string> executive = {executive_program()};
  for (const BadNumber& bad : kBadIntegers)
    SECTION("--inbox '" + bad.text + "'") { require_refused(executive, "--inbox", bad); }
  SECTION("--inbox not a power of two, or below 2") {
    require_refused(executive, "--inbox", {"1000", "'1000' is not a power of two"});
    require_refused(executive, "--inbox", {"1", "'1' is out of range for an unsigned integer: below the minimum 2"});
  }
}
