// Credit exhaustion and recovery: a receiver that stops releasing blocks must stall its sender through the
// transport (credits, or TCP's window), not break it; when it releases again the run completes, in order.
#include <catch2/catch.hpp>

#include <chrono>
#include <string>
#include <thread>

#include "suite.hpp"

using namespace daqx::test;

namespace {

constexpr std::uint32_t kSender = 11, kReceiver = 21;

// The receiver's endpoint properties: a small receive pool, so that what the held frames pin drains it quickly.
PartitionProperties small_receive_pool(const TransportProfile& transport) {
  if (!transport.small_receive_properties.empty()) return transport.small_receive_properties;
  if (!transport.capabilities.posted_receive_buffers) return {};
  return {{"recvBufferSize", "65536", ""}, {"recvDepth", "16", ""}, {"recvPoolSize", "2097152", ""}};
}

}  // namespace

TEST_CASE("a receiver that stops releasing blocks stalls its sender without errors, and the run completes when it "
          "resumes", "[transport][process][faults][in-process]") {
  const TransportProfile& transport = suite_transport();
  // Enough frames to fill the receiver's pool while it holds: pttcp's grows to 256 MiB of 64 KiB blocks, the
  // others are given a 2 MiB one.
  const int kFrames = transport.capabilities.posted_receive_buffers ? 1500 : 6000;
  Host a, b;
  // The sender's window is larger than the run: only the transport can hold it back, not the acknowledgements.
  PartitionBuilder partition("credit");
  NtonContext receiving = add_nton_context(partition, transport, a, Traffic::throughput);
  receiving.endpoint.properties(small_receive_pool(transport));
  receiving.context.application("nton::Receiver", kReceiver, 0, "data").property("holdFor", "5");
  NtonContext sending = add_nton_context(partition, transport, b, Traffic::throughput);
  sending.endpoint.property("sendQueue", "16");
  sending.context.application("nton::Sender", kSender, 0, "data")
      .properties({{"frameSize", "65536", ""},
                   {"frameCount", std::to_string(kFrames), ""},
                   {"window", "100000", ""},
                   {"pattern", "true", ""},
                   {"receivers", "21", ""}});
  const std::string path = write_file("credit.xml", partition.xml());
  ExecutiveProcess receiver(path, a.url()), sender(path, b.url());
  bring_up({&receiver, &sender});
  INFO(sender.output() << receiver.output());

  // While the receiver holds: frames stop arriving although the sender has more, and it waits, unharmed.
  REQUIRE(receiver.wait_metric(kReceiver, "frames_held", 1));
  // Stalled: what the transport delivers stops growing for 400 ms while the receiver still holds everything (the
  // hold lasts 5 s from the first frame; the pool runs dry well within the first).
  double before = -1, after = -2, taken = -1;
  const bool stalled = wait_until([&] {
    before = transport_metric(receiver, "frames_received");
    std::this_thread::sleep_for(std::chrono::milliseconds(400));
    after = transport_metric(receiver, "frames_received");
    taken = receiver.metric(kReceiver, "frames_received");
    return before == after && after > 0 && taken == 0;
  }, std::chrono::seconds(3));
  INFO("transport frames received " << before << " then " << after << "; taken by the receiver " << taken);
  CHECK(stalled);
  CHECK(after < kFrames);
  CHECK(taken == 0);  // nothing taken yet: all held
  // A transport that passes the sender's own blocks to the receiver (shared memory) holds the sender back through
  // its pool as well: the blocks the receiver holds are the sender's.
  const double sender_waits = transport_metric(sender, "sends_would_block") +
                              (transport.capabilities.credit_flow ? transport_metric(sender, "credit_waits") : 0.0) +
                              (transport.capabilities.shared_memory_pools ? sender.metric(kSender, "pool_exhausted") : 0.0);
  CHECK(sender_waits > 0);
  // The receiver's side waited for blocks (its receive pool ran dry) or for the application's queue.
  CHECK(transport_metric(receiver, "receive_pool_waits") + transport_metric(receiver, "delivery_waits") > 0);
  CHECK(sender.metric(kSender, "send_errors") == 0);

  // After the hold: every frame, once, in order, with its pattern; no connection was lost on either side.
  CHECK(receiver.wait_metric(kReceiver, "frames_received", kFrames, std::chrono::seconds(120)));
  CHECK(receiver.metric(kReceiver, "frames_received") == kFrames);
  CHECK(receiver.metric(kReceiver, "pattern_errors") == 0);
  CHECK(receiver.metric(kReceiver, "sequence_errors") == 0);
  CHECK(receiver.metric(kReceiver, "frames_held") > 1);
  CHECK(receiver.metric(kReceiver, "malformed_frames") == 0);
  CHECK(receiver.metric(kReceiver, "send_errors") == 0);
  CHECK(sender.wait_metric(kSender, "done", 1));
  CHECK(sender.metric(kSender, "frames_sent") == kFrames);
  CHECK(sender.metric(kSender, "outstanding") == 0);  // every frame acknowledged
  CHECK(sender.metric(kSender, "send_errors") == 0);
  CHECK(transport_metric(sender, "send_errors") == 0);
  CHECK(transport_metric(sender, "reconnects") == 0);
  CHECK(transport_metric(receiver, "bad_streams") == 0);
  CHECK(transport_metric(receiver, "truncated_frames") == 0);
  // Drained: every block the hold pinned went back, and so did every frame the sender queued.
  stop_and_check_drained(sender, receiver, transport);
}
