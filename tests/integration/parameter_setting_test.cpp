// Parameters set through the control API on a real executive: each value is checked against its declaration
// (type, range, choices) when it is set, a refused one answers 400 with the reason and leaves the value as it was.
#include <catch2/catch.hpp>

#include <Poco/JSON/Array.h>
#include <Poco/JSON/Object.h>

#include <array>
#include <string>
#include <vector>

#include "../support/executive_process.hpp"
#include "../support/partition_builder.hpp"

using namespace daqx::test;
using Catch::Contains;

namespace {

constexpr std::uint32_t kBu = 200;
constexpr std::uint32_t kEvm = 10;

// A BU, an RU and the EvM in one executive, left Halted: the BU's parameters cover every kind of check.
struct HaltedEventBuilder {
  std::uint16_t port = free_port();
  std::string url = "http://127.0.0.1:" + std::to_string(port);
  ExecutiveProcess executive{write_file("parameter-setting.xml", partition(url)), url};

  static std::string partition(const std::string& url) {
    PartitionBuilder partition("parameter-setting");
    ContextBuilder context = partition.context(url);
    context.module("libdaqx_evb.so");
    context.application("evb::BU", kBu);
    context.application("evb::RU", 100);
    context.application("evb::EvM", 10);
    return partition.xml();
  }

  // `value` goes into the JSON string as written: "16\\r" sends a carriage return.
  daqx::HttpReply set(const std::string& name, const std::string& value, std::uint32_t tid = kBu) const {
    return executive.post("/api/applications/" + std::to_string(tid) + "/parameters",
                          "{\"name\":\"" + name + "\",\"value\":\"" + value + "\"}");
  }
  // The value the executive holds now, as GET /api/applications/<tid> shows it.
  std::string value(const std::string& name, std::uint32_t tid = kBu) const {
    Poco::JSON::Object::Ptr app = executive.application(tid);
    if (!app) return "(unreachable)";
    Poco::JSON::Array::Ptr params = app->getArray("parameters");
    for (std::size_t i = 0; i < params->size(); ++i) {
      Poco::JSON::Object::Ptr p = params->getObject(static_cast<unsigned>(i));
      if (p->getValue<std::string>("name") == name) return p->getValue<std::string>("value");
    }
    return "(no such parameter)";
  }
};

// Sets name=value, requires a 400 whose reason contains `because`, and the value unchanged.
void require_refused(const HaltedEventBuilder& evb, const std::string& name, const std::string& value,
                     const std::string& because, std::uint32_t tid = kBu) {
  const std::string before = evb.value(name, tid);
  const daqx::HttpReply reply = evb.set(name, value, tid);
  INFO(name << "=" << value << ": " << reply.status << " " << reply.body);
  CHECK(reply.status == 400);
  CHECK_THAT(reply.body, Contains(because));
  CHECK(evb.value(name, tid) == before);
}

}  // namespace

TEST_CASE("a parameter set through the control API is checked against its declaration: a value of the wrong "
          "type, out of range or not a declared choice is a 400 with the reason and is not stored",
          "[executive][process][http][parameters]") {
  HaltedEventBuilder evb;
  REQUIRE(evb.executive.wait_ready());
  REQUIRE(evb.value("slots") == "16");

  require_refused(evb, "slots", "many", "not an unsigned integer");     // type
  require_refused(evb, "slots", "-3", "not an unsigned integer");
  require_refused(evb, "slots", "5000", "above the maximum 4096");      // declared range
  require_refused(evb, "slots", "0", "below the minimum 1");
  require_refused(evb, "requestInterval", "fast", "not a decimal number");
  require_refused(evb, "requestInterval", "nan", "not a decimal number");  // NaN is inside no range
  require_refused(evb, "requestInterval", "100", "above the maximum 60");
  require_refused(evb, "checkData", "maybe", "not a boolean");
  require_refused(evb, "output", "tape", "is not discard, file or consumer");  // declared choices
  require_refused(evb, "noSuchParameter", "1", "unknown parameter 'noSuchParameter'");

  // A good value is stored, and reads back as set.
  CHECK(evb.set("slots", "32").status == 200);
  CHECK(evb.value("slots") == "32");
  CHECK(evb.set("output", "consumer").status == 200);
  CHECK(evb.value("output") == "consumer");
  CHECK(evb.set("output", "discard").status == 200);

  // Outside Halted nothing is stored at all, good value or bad: 409.
  REQUIRE(evb.executive.transition("configure").status == 200);
  CHECK(evb.set("slots", "8").status == 409);
  CHECK(evb.set("slots", "many").status == 409);
  CHECK(evb.value("slots") == "32");
  CHECK(evb.executive.stop() == 0);
}

TEST_CASE("a number set through the control API is read by the strict syntax: the whole text, decimal, no blanks, "
          "NUL, '+', 0x or exponent, in range: each refused with 400 and the reason",
          "[executive][process][http][parameters]") {
  HaltedEventBuilder evb;
  REQUIRE(evb.executive.wait_ready());
  REQUIRE(evb.value("slots") == "16");
  // Name, value as written in the JSON string ("16\\r" sends a carriage return) and the reason's text in the body.
  const std::vector<std::array<std::string, 3>> refused = {
      {"slots", "0x10", "'0x10' is not an unsigned integer: only decimal digits are accepted (no 0x)"},
      {"slots", " 16", "' 16' is not an unsigned integer: it starts with a blank"},
      {"slots", "16 ", "it ends with a blank, carriage return or line feed"},
      {"slots", "16\\r", "'16\\\\r' is not an unsigned integer: it ends with a blank"},
      {"slots", "16\\n", "it ends with a blank, carriage return or line feed"},
      {"slots", "1\\u00006", "'1\\\\x006' is not an unsigned integer: it holds a NUL byte"},
      {"slots", "+16", "a '+' sign is not accepted"},
      {"slots", "1e1", "an integer has no fraction or exponent"},
      {"slots", "16.0", "an integer has no fraction or exponent"},
      {"slots", "", "it is empty"},
      {"slots", "18446744073709551616", "above the maximum"},
      {"requestInterval", "0x1p-4", "only decimal digits are accepted (no 0x)"},
      {"requestInterval", "inf", "not a decimal number"},
  };
  for (const auto& [name, value, because] : refused) require_refused(evb, name, value, because);
  CHECK(evb.set("requestInterval", "5e-2").status == 200);  // a real may have an exponent
  CHECK(evb.value("requestInterval") == "5e-2");
  CHECK(evb.executive.stop() == 0);
}

TEST_CASE("a value its application would refuse at configure is refused when set, by the check the application "
          "declares, and configure then succeeds",
          "[executive][process][http][parameters]") {
  HaltedEventBuilder evb;
  REQUIRE(evb.executive.wait_ready());
  // The EvM's sized batches: minEventsPerRequest may not pass maxEventsPerRequest, whichever is set second.
  CHECK(evb.set("maxEventsPerRequest", "100", kEvm).status == 200);
  require_refused(evb, "minEventsPerRequest", "200", "minEventsPerRequest (200) is above maxEventsPerRequest (100)",
                  kEvm);
  CHECK(evb.set("minEventsPerRequest", "50", kEvm).status == 200);
  require_refused(evb, "maxEventsPerRequest", "20", "minEventsPerRequest (50) is above maxEventsPerRequest (20)", kEvm);
  // The BU's levels: blocking may not start below throttling.
  require_refused(evb, "blockLevel", "0.2", "blockLevel (0.2) is below throttleLevel (0.5)");
  require_refused(evb, "throttleLevel", "0.95", "blockLevel (0.9) is below throttleLevel (0.95)");
  CHECK(evb.value("minEventsPerRequest", kEvm) == "50");
  CHECK(evb.value("maxEventsPerRequest", kEvm) == "100");
  const daqx::HttpReply configured = evb.executive.transition("configure");
  INFO(configured.body);
  CHECK(configured.status == 200);
  CHECK(evb.executive.stop() == 0);
}
