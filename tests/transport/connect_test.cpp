// The connect command: with connect-on-first-use, every connection can still be opened ahead of a run
// (POST /api/connect, as pt::ibv's connect command), and a peer that is not there is named, not waited for.
#include <Poco/JSON/Array.h>
#include <Poco/JSON/Object.h>
#include <Poco/JSON/Parser.h>
#include <catch2/catch.hpp>

#include <string>

#include "suite.hpp"

using namespace daqx::test;

namespace {

std::string first_use(std::string context) {
  const std::string end_of_properties = "</Properties></Endpoint>";
  return context.replace(context.find(end_of_properties), end_of_properties.size(),
                         "<connectAt>first-use</connectAt>" + end_of_properties);
}

Poco::JSON::Object::Ptr json_object(const std::string& body) {
  return Poco::JSON::Parser().parse(body).extract<Poco::JSON::Object::Ptr>();
}

}  // namespace

TEST_CASE("the connect command opens every connection ahead of a run, and names a peer that is not there",
          "[transport][process]") {
  const TransportProfile& transport = suite_transport();
  Host a, b, absent;
  // The sender's context names two receivers: one whose executive runs, one whose never starts.
  const std::string path = write_file("connect.xml", partition_xml("connect", {
      nton_context(transport, a, Traffic::throughput, application_xml("nton::Receiver", 21, 0)),
      nton_context(transport, absent, Traffic::throughput, application_xml("nton::Receiver", 22, 1)),
      first_use(nton_context(transport, b, Traffic::throughput, application_xml("nton::Sender", 11, 0,
          "<frameSize>4096</frameSize><receivers>21</receivers>")))}));
  ExecutiveProcess receiver(path, a.url()), sender(path, b.url());
  REQUIRE(receiver.wait_ready());
  REQUIRE(sender.wait_ready());
  for (auto* e : {&receiver, &sender}) REQUIRE(e->transition("configure").status == 200);
  INFO(sender.output() << receiver.output());
  // Configured, nothing sent: with first-use no connection has been opened.
  CHECK(transport_metric(receiver, "incoming_connections") == 0);

  const auto answer = sender.post("/api/connect?timeout=1500", "{}");
  INFO(answer.body);
  CHECK(answer.status == 504);  // the absent peer cannot come up
  Poco::JSON::Object::Ptr result = json_object(answer.body);
  CHECK(result->getValue<int>("total") == 2);
  CHECK(result->getValue<int>("up") == 1);
  Poco::JSON::Array::Ptr down = result->getArray("down");
  REQUIRE(down->size() == 1);
  CHECK(down->getObject(0)->getValue<std::string>("remote").find(std::to_string(absent.data)) != std::string::npos);
  // The one that is there is open before any frame: the receiver has accepted it.
  CHECK(wait_until([&] { return transport_metric(receiver, "incoming_connections") == 1; }));
  CHECK(sender.post("/api/connect?timeout=soon", "{}").status == 400);

  // A run then uses the connection that is already open.
  for (auto* e : {&receiver, &sender}) REQUIRE(e->transition("enable").status == 200);
  CHECK(receiver.wait_metric(21, "frames_received", 100));
  CHECK(transport_metric(sender, "send_errors") == 0);
  CHECK(sender.stop() == 0);
  CHECK(receiver.stop() == 0);
}
