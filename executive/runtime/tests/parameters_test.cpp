// Self-describing parameters: type names, validation with its reasons, and the typed values of a ParamSet.
#include <catch2/catch.hpp>

#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "daqx/api/parameters.hpp"

using namespace daqx;

namespace {

ParamSpec spec(ParamType type, std::string default_value = "", std::optional<double> min = std::nullopt,
               std::optional<double> max = std::nullopt) {
  ParamSpec declared;
  declared.name = "value";
  declared.type = type;
  declared.default_value = std::move(default_value);
  declared.min = min;
  declared.max = max;
  return declared;
}

ParamSpec named(std::string name, ParamType type, std::string default_value) {
  ParamSpec declared = spec(type, std::move(default_value));
  declared.name = std::move(name);
  return declared;
}

// One parameter of every type, as an application would declare them.
ParamSet sender_params() {
  ParamSpec frame_size = named("frameSize", ParamType::unsigned_integer, "4096");
  frame_size.min = 64;
  frame_size.max = 65535;
  frame_size.unit = "bytes";
  frame_size.help = "bytes per frame sent";
  return ParamSet({
      frame_size,
      named("lowLatency", ParamType::boolean, "false"),
      named("offset", ParamType::integer, "-3"),
      named("rate", ParamType::real, "2.5"),
      named("label", ParamType::string, "sender"),
      named("paths", ParamType::string_list, "a, b ,c"),
      named("receivers", ParamType::applications, "class:nton::Receiver"),
  });
}

}  // namespace

TEST_CASE("parameter type names are those of the partition format and read back", "[parameters]") {
  const std::vector<std::pair<ParamType, std::string>> names = {
      {ParamType::boolean, "bool"},        {ParamType::integer, "int"},     {ParamType::unsigned_integer, "unsigned"},
      {ParamType::real, "double"},         {ParamType::string, "string"},   {ParamType::string_list, "list"},
      {ParamType::applications, "applications"}};
  for (const auto& [type, name] : names) {
    CHECK(to_string(type) == name);
    CHECK(param_type_from_string(name) == type);
  }
  CHECK_FALSE(param_type_from_string("integer").has_value());
  CHECK_FALSE(param_type_from_string("Bool").has_value());
  CHECK_FALSE(param_type_from_string("").has_value());
}

TEST_CASE("a boolean is true/false, yes/no or 1/0 in any case", "[parameters]") {
  for (const char* text : {"true", "false", "TRUE", "False", "yes", "No", "YES", "1", "0"})
    CHECK(validate_param(spec(ParamType::boolean), text).empty());
  CHECK(validate_param(spec(ParamType::boolean), "maybe") ==
        "not a boolean: 'maybe' (expected true/false, yes/no or 1/0)");
  CHECK_FALSE(validate_param(spec(ParamType::boolean), "").empty());
  CHECK_FALSE(validate_param(spec(ParamType::boolean), "2").empty());
}

TEST_CASE("an integer must be the whole text and fit in 64 bits", "[parameters]") {
  const ParamSpec integer = spec(ParamType::integer);
  CHECK(validate_param(integer, "-42").empty());
  CHECK(validate_param(integer, "9223372036854775807").empty());
  CHECK(validate_param(integer, "12x") == "'12x' is not an integer: only decimal digits are accepted");
  CHECK(validate_param(integer, " 12") == "' 12' is not an integer: it starts with a blank");
  CHECK(validate_param(integer, "12 ") == "'12 ' is not an integer: it ends with a blank, carriage return or line feed");
  CHECK(validate_param(integer, "") == "'' is not an integer: it is empty");
  CHECK(validate_param(integer, "1.5") == "'1.5' is not an integer: an integer has no fraction or exponent");
  CHECK(validate_param(integer, "1e3") == "'1e3' is not an integer: an integer has no fraction or exponent");
  CHECK(validate_param(integer, "0x10") == "'0x10' is not an integer: only decimal digits are accepted (no 0x)");
  CHECK(validate_param(integer, "9223372036854775808") ==
        "'9223372036854775808' is out of range for an integer: above the maximum 9223372036854775807");
}

TEST_CASE("an unsigned integer refuses negatives and overflow", "[parameters]") {
  const ParamSpec count = spec(ParamType::unsigned_integer);
  CHECK(validate_param(count, "0").empty());
  CHECK(validate_param(count, "18446744073709551615").empty());
  CHECK(validate_param(count, "-1") == "'-1' is not an unsigned integer: it is negative");
  CHECK(validate_param(count, "+1") == "'+1' is not an unsigned integer: a '+' sign is not accepted");
  CHECK(validate_param(count, std::string("1\0" "2", 3)) == "'1\\x002' is not an unsigned integer: it holds a NUL byte");
  CHECK(validate_param(count, "18446744073709551616") ==
        "'18446744073709551616' is out of range for an unsigned integer: above the maximum 18446744073709551615");
}

TEST_CASE("numeric bounds are inclusive and named in the reason", "[parameters]") {
  const ParamSpec port = spec(ParamType::unsigned_integer, "", 1, 65535);
  CHECK(validate_param(port, "1").empty());
  CHECK(validate_param(port, "65535").empty());
  CHECK(validate_param(port, "65536") == "'65536' is out of range for an unsigned integer: above the maximum 65535");
  CHECK(validate_param(port, "0") == "'0' is out of range for an unsigned integer: below the minimum 1");
  CHECK(validate_param(spec(ParamType::integer, "", -10, 10), "-11") ==
        "'-11' is out of range for an integer: below the minimum -10");
  CHECK(validate_param(spec(ParamType::real, "", 0.5, 1.5), "0.25") ==
        "'0.25' is out of range for a decimal number: below the minimum 0.5");
  // Bounds that are not whole numbers bound an integer at the whole numbers inside them.
  CHECK(validate_param(spec(ParamType::unsigned_integer, "", 0.5, 10.5), "0") ==
        "'0' is out of range for an unsigned integer: below the minimum 1");
  CHECK(validate_param(spec(ParamType::unsigned_integer, "", 0.5, 10.5), "10").empty());
  CHECK(validate_param(spec(ParamType::real, "", 0.5, 1.5), "1.5").empty());
}

TEST_CASE("a real number is a finite double written in full", "[parameters]") {
  const ParamSpec real = spec(ParamType::real);
  for (const char* text : {"1", "-2.5", "1e3", "0.001"}) CHECK(validate_param(real, text).empty());
  CHECK(validate_param(real, "abc") == "'abc' is not a decimal number: no digits (inf and nan are not numbers here)");
  CHECK(validate_param(real, "1.5s") == "'1.5s' is not a decimal number: only decimal digits, a point and an exponent are accepted");
  CHECK(validate_param(real, "0x1p4") == "'0x1p4' is not a decimal number: only decimal digits are accepted (no 0x)");
  CHECK_FALSE(validate_param(real, "inf").empty());
  CHECK_FALSE(validate_param(real, "nan").empty());
}

TEST_CASE("a string takes any text and a list refuses empty items", "[parameters]") {
  CHECK(validate_param(spec(ParamType::string), "").empty());
  CHECK(validate_param(spec(ParamType::string), " anything, at all ").empty());
  CHECK(validate_param(spec(ParamType::string_list), "").empty());
  CHECK(validate_param(spec(ParamType::string_list), "a, b,c").empty());
  CHECK(validate_param(spec(ParamType::string_list), "a,,b") == "empty item in the list 'a,,b'");
  CHECK_FALSE(validate_param(spec(ParamType::string_list), "a,").empty());
}

TEST_CASE("an applications selector is class:NAME, *, ids, or empty", "[parameters]") {
  const ParamSpec selector = spec(ParamType::applications);
  for (const char* text : {"", "*", "class:nton::Receiver", "3", "3,4,5", " 3, 4 "})
    CHECK(validate_param(selector, text).empty());
  CHECK(validate_param(selector, "class:") == "no class name after 'class:' in 'class:'");
  CHECK(validate_param(selector, "0").find("not an application selector: '0'") == 0);
  CHECK_FALSE(validate_param(selector, "nton::Receiver").empty());
  CHECK_FALSE(validate_param(selector, "3,,4").empty());
}

TEST_CASE("a parameter set starts from the declared defaults", "[parameters]") {
  const ParamSet params = sender_params();
  CHECK(params.specs().size() == 7);
  CHECK(params.text("frameSize") == "4096");
  CHECK(params.unsigned_integer("frameSize") == 4096);
  CHECK(params.boolean("lowLatency") == false);
  CHECK(params.integer("offset") == -3);
  CHECK(params.real("rate") == Approx(2.5));
  CHECK(params.string("label") == "sender");
  CHECK(params.list("paths") == std::vector<std::string>{"a", "b", "c"});
  CHECK(params.text("receivers") == "class:nton::Receiver");
}

TEST_CASE("a parameter set finds a declaration by name", "[parameters]") {
  const ParamSet params = sender_params();
  REQUIRE(params.spec("frameSize") != nullptr);
  CHECK(params.spec("frameSize")->unit == "bytes");
  CHECK(params.spec("frameSize")->help == "bytes per frame sent");
  CHECK(params.spec("nothing") == nullptr);
}

TEST_CASE("setting a valid value changes it, an invalid one is refused with the reason and changes nothing",
          "[parameters]") {
  ParamSet params = sender_params();
  CHECK(params.set("frameSize", "8192").empty());
  CHECK(params.unsigned_integer("frameSize") == 8192);
  CHECK(params.set("frameSize", "65536") == "'65536' is out of range for an unsigned integer: above the maximum 65535");
  CHECK(params.set("frameSize", "big") == "'big' is not an unsigned integer: only decimal digits are accepted");
  CHECK(params.unsigned_integer("frameSize") == 8192);
  CHECK(params.set("lowLatency", "Yes").empty());
  CHECK(params.boolean("lowLatency"));
  CHECK(params.set("lowLatency", "0").empty());
  CHECK_FALSE(params.boolean("lowLatency"));
}

TEST_CASE("setting an undeclared parameter is refused", "[parameters]") {
  ParamSet params = sender_params();
  CHECK(params.set("frameSiz", "1") == "unknown parameter 'frameSiz'");
}

TEST_CASE("reading an undeclared parameter throws out_of_range naming it", "[parameters]") {
  const ParamSet params = sender_params();
  CHECK_THROWS_AS(params.text("nothing"), std::out_of_range);
  CHECK_THROWS_WITH(params.text("nothing"), "no parameter 'nothing'");
  CHECK_THROWS_WITH(params.unsigned_integer("nothing"), "no parameter 'nothing'");
  CHECK_THROWS_AS(params.boolean("nothing"), std::out_of_range);
  CHECK_THROWS_AS(params.list("nothing"), std::out_of_range);
  CHECK_THROWS_AS(params.applications("nothing"), std::out_of_range);
}

TEST_CASE("reading a value as a type it is not throws invalid_argument", "[parameters]") {
  const ParamSet params = sender_params();
  CHECK_THROWS_AS(params.integer("label"), std::invalid_argument);
  CHECK_THROWS_AS(params.boolean("frameSize"), std::invalid_argument);
  CHECK_THROWS_AS(params.unsigned_integer("offset"), std::invalid_argument);
  CHECK_THROWS_AS(params.integer("rate"), std::invalid_argument);
  CHECK_THROWS_AS(params.real("label"), std::invalid_argument);
  CHECK_THROWS_AS(params.applications("label"), std::invalid_argument);
  // Reading across numeric types works when the text fits.
  CHECK(params.integer("frameSize") == 4096);
  CHECK(params.real("frameSize") == Approx(4096));
}

TEST_CASE("a list splits on commas and trims blanks, an empty text is an empty list", "[parameters]") {
  ParamSet params = sender_params();
  CHECK(params.set("paths", " /a , /b/c,d ").empty());
  CHECK(params.list("paths") == std::vector<std::string>{"/a", "/b/c", "d"});
  CHECK(params.set("paths", "").empty());
  CHECK(params.list("paths").empty());
  CHECK(params.list("label") == std::vector<std::string>{"sender"});  // any text reads as a list
}

TEST_CASE("an applications parameter gives the TIDs resolved for it, none before", "[parameters]") {
  ParamSet params = sender_params();
  CHECK(params.applications("receivers").empty());
  params.set_resolved("receivers", {20, 21});
  CHECK(params.applications("receivers") == std::vector<std::uint32_t>{20, 21});
  CHECK_THROWS_AS(params.set_resolved("nothing", {1}), std::out_of_range);
  CHECK_THROWS_AS(params.set_resolved("label", {1}), std::invalid_argument);
}

TEST_CASE("a new selector forgets the previous resolution", "[parameters]") {
  ParamSet params = sender_params();
  params.set_resolved("receivers", {20, 21});
  CHECK(params.set("receivers", "20").empty());
  CHECK(params.applications("receivers").empty());
}

TEST_CASE("a declaration with an invalid default or a repeated name is refused", "[parameters]") {
  CHECK_THROWS_AS(ParamSet({named("frameSize", ParamType::unsigned_integer, "")}), std::invalid_argument);
  CHECK_THROWS_WITH(ParamSet({named("frameSize", ParamType::unsigned_integer, "-1")}),
                    "parameter 'frameSize' has an invalid default: '-1' is not an unsigned integer: it is negative");
  CHECK_THROWS_WITH(ParamSet({named("a", ParamType::string, ""), named("a", ParamType::string, "")}),
                    "parameter 'a' is declared twice");
}

TEST_CASE("an empty parameter set declares nothing", "[parameters]") {
  const ParamSet params;
  CHECK(params.specs().empty());
  CHECK(params.spec("x") == nullptr);
  CHECK_THROWS_AS(params.text("x"), std::out_of_range);
}

TEST_CASE("a string parameter with allowed words refuses any other word, naming them all", "[parameters]") {
  ParamSpec declared = spec(ParamType::string, "epoll");
  declared.allowed = {"epoll", "busy"};
  CHECK(validate_param(declared, "busy").empty());
  CHECK(validate_param(declared, "spin") == "'spin' is not epoll or busy");
  CHECK(validate_param(declared, "Busy") == "'Busy' is not epoll or busy");  // words are exact, as the code reads them
  declared.allowed = {"thread", "inline", "auto"};
  CHECK(validate_param(declared, "") == "'' is not thread, inline or auto");
  // A set refuses a default outside its words: the declaration is wrong.
  declared.default_value = "sometimes";
  CHECK_THROWS_WITH(ParamSet({declared}), Catch::Contains("invalid default: 'sometimes' is not thread, inline or auto"));
}

TEST_CASE("bounds are written in the parameter's own type", "[parameters]") {
  CHECK(param_bound_text(spec(ParamType::unsigned_integer), 4096) == "4096");
  CHECK(param_bound_text(spec(ParamType::unsigned_integer), 64.0 * 1024 * 1024 * 1024) == "68719476736");
  CHECK(param_bound_text(spec(ParamType::integer), -5) == "-5");
  CHECK(param_bound_text(spec(ParamType::real), 0.05) == "0.05");
  CHECK(param_bound_text(spec(ParamType::real), 3600) == "3600");
}

namespace {

// A class with a lower and an upper bound that must not cross, declared as a check on one of them.
ParamSet bounded_batch() {
  ParamSpec low = named("minEvents", ParamType::unsigned_integer, "8");
  low.check = [](const ParamSet& values) -> std::string {
    if (values.unsigned_integer("minEvents") <= values.unsigned_integer("maxEvents")) return {};
    return "minEvents (" + values.text("minEvents") + ") is above maxEvents (" + values.text("maxEvents") + ")";
  };
  return ParamSet({low, named("maxEvents", ParamType::unsigned_integer, "4096")});
}

}  // namespace

TEST_CASE("a declared check runs when a value is set, against the other values, and a refusal changes nothing",
          "[parameters]") {
  ParamSet params = bounded_batch();
  CHECK(params.set("minEvents", "200").empty());
  CHECK(params.set("maxEvents", "100") == "minEvents (200) is above maxEvents (100)");  // the check of the other one
  CHECK(params.unsigned_integer("maxEvents") == 4096);
  CHECK(params.set("minEvents", "5000") == "minEvents (5000) is above maxEvents (4096)");
  CHECK(params.unsigned_integer("minEvents") == 200);
  // Syntax, bounds and choices come first: the check sees only valid values.
  CHECK(params.set("minEvents", "0x10") == "'0x10' is not an unsigned integer: only decimal digits are accepted (no 0x)");
}

TEST_CASE("values set together are checked together, whatever their order, and a refusal changes none of them",
          "[parameters]") {
  ParamSet params = bounded_batch();
  // One at a time, maxEvents=4 first would be refused against the default minEvents 8.
  CHECK(params.set_together({{"maxEvents", "4"}, {"minEvents", "2"}}).empty());
  CHECK(params.unsigned_integer("minEvents") == 2);
  CHECK(params.unsigned_integer("maxEvents") == 4);
  CHECK(params.set_together({{"maxEvents", "100"}, {"minEvents", "200"}}) == "minEvents (200) is above maxEvents (100)");
  CHECK(params.unsigned_integer("minEvents") == 2);
  CHECK(params.unsigned_integer("maxEvents") == 4);
  CHECK(params.set_together({{"maxEvents", "100"}, {"minEvents", "-1"}}) ==
        "parameter 'minEvents': '-1' is not an unsigned integer: it is negative");
  CHECK(params.unsigned_integer("maxEvents") == 4);
  CHECK(params.set_together({{"maxEvents", "100"}, {"nothing", "1"}}) == "unknown parameter 'nothing'");
  CHECK(params.unsigned_integer("maxEvents") == 4);
}

TEST_CASE("defaults that fail their own check are a declaration error", "[parameters]") {
  ParamSpec low = named("minEvents", ParamType::unsigned_integer, "10");
  low.check = [](const ParamSet& values) -> std::string {
    return values.unsigned_integer("minEvents") <= values.unsigned_integer("maxEvents") ? "" : "crossed";
  };
  CHECK_THROWS_WITH(ParamSet({low, named("maxEvents", ParamType::unsigned_integer, "5")}),
                    "the declared defaults fail their own check: crossed");
}

TEST_CASE("a declared check that throws refuses the value with the reason instead of escaping the setter",
          "[parameters]") {
  ParamSpec odd = named("level", ParamType::unsigned_integer, "1");
  odd.check = [](const ParamSet& values) -> std::string {
    if (values.unsigned_integer("level") > 5) values.text("undeclared");  // throws std::out_of_range
    return {};
  };
  ParamSet params({odd});
  CHECK(params.set("level", "3").empty());
  CHECK(params.set("level", "7") == "the check of parameter 'level' failed: no parameter 'undeclared'");
  CHECK(params.unsigned_integer("level") == 3);
}
