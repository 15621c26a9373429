// The connect command: with connect-on-first-use, every connection can still be opened ahead of a run
// (POST /api/connect, as pt::ibv's connect command), and a peer that is not there is named, not waited for.
#include <Poco/JSON/Array.h>
#include <Poco/JSON/Object.h>
#include <Poco/JSON/Parser.h>
#include <catch2/catch.hpp>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "../support/process.hpp"
#include "suite.hpp"

using namespace daqx::test;
using Catch::Contains;

namespace {

// The context's endpoint opens its connections when the first frame goes, not at configure.
NtonContext first_use(NtonContext context) {
  context.endpoint.property("connectAt", "first-use");
  return context;
}

Poco::JSON::Object::Ptr json_object(const std::string& body) {
  return Poco::JSON::Parser().parse(body).extract<Poco::JSON::Object::Ptr>();
}

struct Connection {
  std::string remote;
  bool up = false;
};

// The outgoing connections an executive's transports list (/api/transports).
std::vector<Connection> outgoing_connections(const ExecutiveProcess& executive) {
  std::vector<Connection> list;
  const auto reply = executive.get("/api/transports");
  if (reply.status != 200) return list;
  const auto transports = Poco::JSON::Parser().parse(reply.body).extract<Poco::JSON::Array::Ptr>();
  for (std::size_t t = 0; t < transports->size(); ++t) {
    const auto connections = transports->getObject(static_cast<unsigned>(t))->getArray("connections");
    for (std::size_t i = 0; connections && i < connections->size(); ++i) {
      const auto c = connections->getObject(static_cast<unsigned>(i));
      if (c->getValue<bool>("outgoing")) list.push_back({c->getValue<std::string>("remote"), c->getValue<bool>("up")});
    }
  }
  return list;
}

ProcessResult daqxctl_connect(const std::string& url, const std::string& seconds) {
  return run_process({tool_program("daqxctl"), "--url", url, "--timeout", seconds, "connect"}, std::chrono::seconds(60));
}

}  // namespace

TEST_CASE("the connect command opens every connection ahead of a run, and names a peer that is not there",
          "[transport][process]") {
  const TransportProfile& transport = suite_transport();
  Host a, b, absent;
  // The sender's context plans connections to two receivers: one whose executive runs, one whose never starts
  // (a second sender sends it one frame).
  PartitionBuilder partition("connect");
  add_nton_context(partition, transport, a, Traffic::throughput).context.application("nton::Receiver", 21, 0, "data");
  add_nton_context(partition, transport, absent, Traffic::throughput)
      .context.application("nton::Receiver", 22, 1, "data");
  NtonContext sending = first_use(add_nton_context(partition, transport, b, Traffic::throughput));
  sending.context.application("nton::Sender", 11, 0, "data").properties({{"frameSize", "4096", ""}, {"receivers", "21", ""}});
  sending.context.application("nton::Sender", 12, 1, "data").properties({{"frameCount", "1", ""}, {"receivers", "22", ""}});
  const std::string path = write_file("connect.xml", partition.xml());
  ExecutiveProcess receiver(path, a.url()), sender(path, b.url());
  REQUIRE(receiver.wait_ready());
  REQUIRE(sender.wait_ready());
  for (auto* e : {&receiver, &sender}) REQUIRE(e->transition("configure").status == 200);
  INFO(sender.output() << receiver.output());
  // Configured, nothing sent: with first-use no connection has been opened.
  CHECK(transport_metric(receiver, "incoming_connections") == 0);

  const auto asked = std::chrono::steady_clock::now();
  const auto answer = sender.post("/api/connect?timeout=1500", "{}");
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - asked).count();
  INFO(answer.body);
  CHECK(answer.status == 504);  // the absent peer cannot come up
  Poco::JSON::Object::Ptr result = json_object(answer.body);
  CHECK(result->getValue<int>("total") == 2);
  CHECK(result->getValue<int>("up") == 1);
  // It waited for the timeout, and answered once it passed (generous bounds: a loaded machine is slow to answer).
  CHECK(result->getValue<double>("seconds") >= 1.5);
  CHECK(waited < 5);
  Poco::JSON::Array::Ptr down = result->getArray("down");
  REQUIRE(down->size() == 1);
  CHECK(down->getObject(0)->getValue<std::string>("remote").find(std::to_string(absent.data)) != std::string::npos);
  // The one that is there is open before any frame: the receiver has accepted it.
  CHECK(wait_until([&] { return transport_metric(receiver, "incoming_connections") == 1; }));
  CHECK(sender.post("/api/connect?timeout=soon", "{}").status == 400);

  // A run then uses the connection that is already open.
  for (auto* e : {&receiver, &sender}) REQUIRE(e->transition("enable").status == 200);
  CHECK(receiver.wait_metric(21, "frames_received", 100));
  // Without an error on it. The transport's send_errors may already count the one frame of the second sender:
  // its first-use connection to the absent peer fails whenever the attempt ends, before or after this point.
  CHECK(connection_metric(sender, a.url(), "send_errors") == 0);
  CHECK(transport_metric(sender, "send_errors") <= 1);
  CHECK(sender.stop() == 0);
  CHECK(receiver.stop() == 0);
}

TEST_CASE("the connect command answers 200 once every outgoing connection is up, and the transports show them up",
          "[transport][process]") {
  const TransportProfile& transport = suite_transport();
  Host a, b, c;
  // One sender, two receivers in two other executives: two outgoing connections, neither opened by a frame.
  // Every context connects at first use, so the receivers do not open theirs (to each other) meanwhile.
  PartitionBuilder partition("connect-all");
  first_use(add_nton_context(partition, transport, a, Traffic::throughput))
      .context.application("nton::Receiver", 21, 0, "data");
  first_use(add_nton_context(partition, transport, c, Traffic::throughput))
      .context.application("nton::Receiver", 22, 1, "data");
  first_use(add_nton_context(partition, transport, b, Traffic::throughput))
      .context.application("nton::Sender", 11, 0, "data")
      .properties({{"frameSize", "4096", ""}, {"receivers", "21,22", ""}});
  const std::string path = write_file("connect-all.xml", partition.xml());
  ExecutiveProcess first(path, a.url()), second(path, c.url()), sender(path, b.url());
  for (auto* e : {&first, &second, &sender}) REQUIRE(e->wait_ready());
  for (auto* e : {&first, &second, &sender}) REQUIRE(e->transition("configure").status == 200);
  INFO(sender.output() << first.output() << second.output());
  CHECK(transport_metric(first, "incoming_connections") == 0);
  CHECK(transport_metric(second, "incoming_connections") == 0);

  const auto answer = sender.post("/api/connect?timeout=20000", "{}");
  INFO(answer.body);
  CHECK(answer.status == 200);
  Poco::JSON::Object::Ptr result = json_object(answer.body);
  CHECK(result->getValue<int>("total") == 2);
  CHECK(result->getValue<int>("up") == 2);
  CHECK(result->getArray("down")->size() == 0);
  CHECK(result->getValue<double>("seconds") < 20);
  // The transports list them up, both executives accepted them, and no frame was sent to do it.
  const std::vector<Connection> connections = outgoing_connections(sender);
  CHECK(connections.size() == 2);
  for (const Connection& connection : connections) {
    INFO(connection.remote);
    CHECK(connection.up);
  }
  CHECK(wait_until([&] { return transport_metric(first, "incoming_connections") == 1; }));
  CHECK(wait_until([&] { return transport_metric(second, "incoming_connections") == 1; }));
  CHECK(first.metric(21, "frames_received") == 0);
  // Asked again, with everything up: at once, and daqxctl says so.
  const ProcessResult ctl = daqxctl_connect(b.url(), "10");
  INFO(ctl.output);
  CHECK(ctl.exit_code == 0);
  CHECK_THAT(ctl.output, Contains("2/2 connections up in"));

  for (auto* e : {&first, &second, &sender}) CHECK(e->stop() == 0);
}

TEST_CASE("a peer that was not listening at one connect command is reached by the next, once it listens",
          "[transport][process]") {
  const TransportProfile& transport = suite_transport();
  Host late, b;
  PartitionBuilder partition("connect-late");
  add_nton_context(partition, transport, late, Traffic::throughput)
      .context.application("nton::Receiver", 21, 0, "data");
  first_use(add_nton_context(partition, transport, b, Traffic::throughput))
      .context.application("nton::Sender", 11, 0, "data")
      .properties({{"frameSize", "4096", ""}, {"receivers", "21", ""}});
  const std::string path = write_file("connect-late.xml", partition.xml());
  ExecutiveProcess sender(path, b.url());
  REQUIRE(sender.wait_ready());
  REQUIRE(sender.transition("configure").status == 200);
  INFO(sender.output());

  // Nobody listens there yet: daqxctl waits its second, names the connection and exits 1.
  const ProcessResult refused = daqxctl_connect(b.url(), "1");
  INFO(refused.output);
  CHECK(refused.exit_code == 1);
  CHECK_THAT(refused.output, Contains("0/1 connections up in") && Contains("down: " + transport.protocol) &&
                             Contains(std::to_string(late.data)));

  // The peer starts; the next connect command tries the refused connection again and it comes up.
  ExecutiveProcess receiver(path, late.url());
  REQUIRE(receiver.wait_ready());
  REQUIRE(receiver.transition("configure").status == 200);
  const auto answer = sender.post("/api/connect?timeout=20000", "{}");
  INFO(answer.body << receiver.output());
  CHECK(answer.status == 200);
  CHECK(json_object(answer.body)->getValue<int>("up") == 1);
  CHECK(wait_until([&] { return transport_metric(receiver, "incoming_connections") == 1; }));

  // And it carries the run.
  for (auto* e : {&receiver, &sender}) REQUIRE(e->transition("enable").status == 200);
  CHECK(receiver.wait_metric(21, "frames_received", 100));
  CHECK(transport_metric(sender, "send_errors") == 0);
  CHECK(sender.stop() == 0);
  CHECK(receiver.stop() == 0);
}

TEST_CASE("past maxIncoming a peer's connection is refused at once and counted, it gets in when another closes, and "
          "no frame is lost", "[transport][process]") {
  const TransportProfile& transport = suite_transport();
  Host a, b, c, d;
  PartitionBuilder partition("max-incoming");
  NtonContext receiving = add_nton_context(partition, transport, a, Traffic::throughput);
  receiving.endpoint.property("maxIncoming", "2");
  receiving.context.application("nton::Receiver", 21, 0, "data");
  auto add_sender = [&](const Host& h, std::uint32_t tid, std::uint32_t instance) {
    add_nton_context(partition, transport, h, Traffic::throughput)
        .context.application("nton::Sender", tid, instance, "data")
        .properties({{"frameSize", "4096", ""}, {"frameCount", "3000", ""}, {"receivers", "21", ""}});
  };
  add_sender(b, 11, 0);
  add_sender(c, 12, 1);
  add_sender(d, 13, 2);
  const std::string path = write_file("max-incoming.xml", partition.xml());
  ExecutiveProcess receiver(path, a.url());
  REQUIRE(receiver.wait_ready());
  // One sender at a time, so the third is the one past the limit.
  std::vector<std::unique_ptr<ExecutiveProcess>> senders;
  for (const Host* h : {&b, &c, &d}) {
    senders.push_back(std::make_unique<ExecutiveProcess>(path, h->url()));
    REQUIRE(senders.back()->wait_ready());
    if (senders.size() < 3)
      REQUIRE(wait_until([&] { return transport_metric(receiver, "incoming_connections") == static_cast<double>(senders.size()); }));
  }
  INFO(receiver.output());
  CHECK(wait_until([&] { return transport_metric(receiver, "connections_over_limit") >= 1; }));
  CHECK(transport_metric(receiver, "incoming_connections") == 2);
  CHECK_THAT(receiver.output(), Contains("maxIncoming (2) are open"));

  // The two that got in carry their frames.
  REQUIRE(receiver.transition("configure").status == 200);
  REQUIRE(receiver.transition("enable").status == 200);
  for (int i = 0; i < 2; ++i) {
    REQUIRE(senders[i]->transition("configure").status == 200);
    REQUIRE(senders[i]->transition("enable").status == 200);
  }
  REQUIRE(receiver.wait_metric(21, "frames_received", 6000));
  // The first sender goes: its connection closes, and the refused one is let in on its next try.
  const double accepted = transport_metric(receiver, "connections_accepted");
  CHECK(senders[0]->transition("stop").status == 200);
  CHECK(senders[0]->stop() == 0);
  CHECK(wait_until([&] {
    return transport_metric(receiver, "connections_accepted") > accepted &&
           transport_metric(receiver, "incoming_connections") == 2;
  }, std::chrono::seconds(30)));
  REQUIRE(senders[2]->transition("configure").status == 200);
  REQUIRE(senders[2]->transition("enable").status == 200);
  CHECK(receiver.wait_metric(21, "frames_received", 9000));
  CHECK(receiver.metric(21, "frames_received") == 9000);
  CHECK(receiver.metric(21, "pattern_errors") == 0);
  for (std::size_t i = 1; i < senders.size(); ++i) CHECK(senders[i]->transition("stop").status == 200);
  CHECK(receiver.transition("stop").status == 200);
  for (std::size_t i = 1; i < senders.size(); ++i) CHECK(senders[i]->stop() == 0);
  CHECK(receiver.stop() == 0);
}
