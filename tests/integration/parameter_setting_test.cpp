// Parameters set through the control API on a real executive: each value is checked against its declaration
// (type, range, choices) when it is set, a refused one answers 400 with the reason and leaves the value as it was.
#include <catch2/catch.hpp>

#include <Poco/JSON/Array.h>
#include <Poco/JSON/Object.h>

#include <string>

#include "../support/executive_process.hpp"
#include "../support/partition_builder.hpp"

using namespace daqx::test;
using Catch::Contains;

namespace {

constexpr std::uint32_t kBu = 200;

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

  daqx::HttpReply set(const std::string& name, const std::string& value) const {
    return executive.post("/api/applications/" + std::to_string(kBu) + "/parameters",
                          "{\"name\":\"" + name + "\",\"value\":\"" + value + "\"}");
  }
  // The value the executive holds now, as GET /api/applications/<tid> shows it.
  std::string value(const std::string& name) const {
    Poco::JSON::Object::Ptr app = executive.application(kBu);
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
                     const std::string& because) {
  const std::string before = evb.value(name);
  const daqx::HttpReply reply = evb.set(name, value);
  INFO(name << "=" << value << ": " << reply.status << " " << reply.body);
  CHECK(reply.status == 400);
  CHECK_THAT(reply.body, Contains(because));
  CHECK(evb.value(name) == before);
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
  require_refused(evb, "requestInterval", "fast", "not a number");
  require_refused(evb, "requestInterval", "nan", "not a number");       // NaN is inside no range
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
