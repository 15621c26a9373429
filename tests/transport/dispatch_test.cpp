// Transport suite, dispatch: an application with inline dispatch has its handlers run on the transport's
// receive thread (the kernel's name for the thread says so); with dispatch=thread on its own dispatch thread;
// either way every frame arrives once, in order.
#include <catch2/catch.hpp>

#include <Poco/JSON/Array.h>
#include <Poco/JSON/Object.h>

#include <string>

#include "suite.hpp"

using namespace daqx::test;

namespace {

constexpr std::uint32_t kSender = 11, kReceiver = 21;

// The name of the thread that ran the receiver's last data handler (nton::Receiver's handler_thread gauge).
std::string handler_thread(const ExecutiveProcess& executive) {
  Poco::JSON::Object::Ptr app = executive.application(kReceiver);
  if (!app) return "";
  Poco::JSON::Array::Ptr metrics = app->getArray("metrics");
  for (std::size_t i = 0; metrics && i < metrics->size(); ++i) {
    Poco::JSON::Object::Ptr m = metrics->getObject(static_cast<unsigned>(i));
    if (m->getValue<std::string>("name") == "handler_thread") return m->getObject("labels")->getValue<std::string>("thread");
  }
  return "";
}

struct Run {
  std::string thread;   // where the handler ran
  double inline_frames = 0;
};

Run run(const TransportProfile& transport, const std::string& dispatch) {
  Host a, b;
  PartitionBuilder partition("dispatch");
  add_nton_context(partition, transport, a, Traffic::latency)
      .context.application("nton::Receiver", kReceiver, 0, "data")
      .property("dispatch", dispatch);
  add_nton_context(partition, transport, b, Traffic::latency)
      .context.application("nton::Sender", kSender, 0, "data")
      .properties({{"frameSize", "512", ""}, {"frameCount", "2000", ""}, {"window", "64", ""}, {"receivers", "21", ""}});
  const std::string path = write_file("dispatch-" + dispatch + ".xml", partition.xml());
  ExecutiveProcess receiver(path, a.url()), sender(path, b.url());
  bring_up({&receiver, &sender});
  const ExecutiveProcess::Progress received = receiver.wait_progress(kReceiver, "frames_received", 2000);
  INFO(received.trace << "\n" << receiver.output());
  REQUIRE(received.reached);
  CHECK(receiver.metric(kReceiver, "sequence_errors") == 0);
  CHECK(receiver.metric(kReceiver, "pattern_errors") == 0);
  REQUIRE(sender.wait_metric(kSender, "done", 1));
  Run result{handler_thread(receiver), receiver.metric(kReceiver, "frames_dispatched_inline")};
  CHECK(sender.stop() == 0);
  CHECK(receiver.stop() == 0);
  return result;
}

}  // namespace

TEST_CASE("a handler declared inline runs on the transport's receive thread", "[transport][process][dispatch]") {
  const TransportProfile& transport = suite_transport();
  const Run inline_run = run(transport, "inline");
  // The kernel's name of the thread (its comm: the tail of pt/<protocol>/recv).
  CHECK(inline_run.thread == "pt/" + transport.protocol + "/recv");
  CHECK(inline_run.inline_frames > 0);
}

TEST_CASE("a handler with dispatch=thread runs on its application's dispatch thread", "[transport][process][dispatch]") {
  const TransportProfile& transport = suite_transport();
  const Run threaded = run(transport, "thread");
  CHECK_THAT(threaded.thread, Catch::EndsWith("/dispatch"));
  CHECK(threaded.inline_frames == 0);
}
