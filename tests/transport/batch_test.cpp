// Transport suite, batches: nton's Sender sending batches (send_batch) and its Receiver taking them (bind_batch),
// with each other and with peers that do not batch, the receiver's handlers inline and on its dispatch thread:
// every frame arrives once, in order, intact, is acknowledged, and every block goes back.
#include <catch2/catch.hpp>

#include <cstdint>
#include <string>

#include "suite.hpp"

using namespace daqx::test;

namespace {

constexpr std::uint32_t kSender = 11, kReceiver = 21;
constexpr std::uint32_t kFrameSize = 256;
constexpr std::uint64_t kFrames = 20000;  // a run's frames, a quarter of them in the soft-RoCE guest (work)

struct Shape {
  std::uint64_t sender_batch = 1;  // the Sender's batch: frames per send_batch call (1: one send per frame)
  bool receiver_batch = false;     // the Receiver's batch: a batch handler (bind_batch)
  std::string dispatch;            // the Receiver's dispatch: inline or thread
  std::uint64_t frames = kFrames;  // the Sender's frameCount
};

// What the receiver's host counted of its handler calls.
struct Dispatched {
  double frames = 0;
  double batches = 0;
  double inline_frames = 0;
};

// One sender and one receiver, each in its own executive, over the run's transport: every frame arrives once, in
// order and intact (the receiver checks sequences and patterns), the sender sees every one acknowledged, and
// after stop every block is back.
Dispatched run(const TransportProfile& transport, const Shape& shape) {
  const std::string name = "batch-" + std::to_string(shape.sender_batch) + "-to-" +
                           (shape.receiver_batch ? "batch" : "single") + "-" + shape.dispatch + "-" +
                           std::to_string(shape.frames);
  INFO(name);
  Host a, b;
  PartitionBuilder partition(name);
  add_nton_context(partition, transport, a, Traffic::throughput)
      .context.application("nton::Receiver", kReceiver, 0, "data")
      .properties({{"batch", shape.receiver_batch ? "true" : "false", ""}, {"dispatch", shape.dispatch, ""}});
  add_nton_context(partition, transport, b, Traffic::throughput)
      .context.application("nton::Sender", kSender, 0, "data")
      .properties({{"frameSize", std::to_string(kFrameSize), ""},
                   {"frameCount", std::to_string(shape.frames), ""},
                   {"window", "256", ""},
                   {"ackEvery", "64", ""},
                   {"batch", std::to_string(shape.sender_batch), ""},
                   {"receivers", std::to_string(kReceiver), ""}});
  const std::string path = write_file(name + ".xml", partition.xml());
  ExecutiveProcess receiver(path, a.url()), sender(path, b.url());
  bring_up({&receiver, &sender});
  const ExecutiveProcess::Progress received = receiver.wait_progress(kReceiver, "frames_received", shape.frames);
  INFO(received.trace << "\n" << receiver.output() << sender.output());
  REQUIRE(received.reached);
  REQUIRE(sender.wait_metric(kSender, "done", 1));
  const auto frames = static_cast<double>(shape.frames);
  CHECK(receiver.metric(kReceiver, "frames_received") == frames);
  CHECK(receiver.metric(kReceiver, "bytes_received") == frames * kFrameSize);
  CHECK(receiver.metric(kReceiver, "sequence_errors") == 0);
  CHECK(receiver.metric(kReceiver, "pattern_errors") == 0);
  CHECK(receiver.metric(kReceiver, "malformed_frames") == 0);
  // Every frame acknowledged, the last (partial) batch's too: the sender is done with none outstanding, and it
  // needed no end-of-run frame (its last data frame asked for the acknowledgement).
  CHECK(sender.metric(kSender, "frames_sent") == frames);
  CHECK(sender.metric(kSender, "outstanding") == 0);
  CHECK(sender.metric(kSender, "acks_received") > 0);
  CHECK(sender.metric(kSender, "send_errors") == 0);
  CHECK(transport_metric(sender, "send_errors") == 0);
  const Dispatched dispatched{receiver.metric(kReceiver, "frames_dispatched"),
                              receiver.metric(kReceiver, "batches_dispatched"),
                              receiver.metric(kReceiver, "frames_dispatched_inline")};
  CHECK(dispatched.frames == frames);  // data frames only come to a receiver, each handed over once
  if (shape.dispatch == "inline") CHECK(dispatched.inline_frames > 0);
  if (shape.dispatch == "thread") CHECK(dispatched.inline_frames == 0);
  stop_and_check_drained(sender, receiver, transport);
  return dispatched;
}

}  // namespace

TEST_CASE("a sender of batches to a receiver of batches delivers every frame once, in order, and the receiver's "
          "handler takes several frames a call",
          "[transport][process][batch]") {
  const TransportProfile& transport = suite_transport();
  const std::string dispatch = GENERATE("inline", "thread");
  const Dispatched dispatched = run(transport, {32, true, dispatch, transport.work(kFrames)});
  INFO(dispatched.frames << " frames in " << dispatched.batches << " calls");
  // That batches formed at all (frames come 32 to a call from the sender, packed by the transport); how large
  // they are depends on timing.
  CHECK(dispatched.batches > 0);
  CHECK(dispatched.frames / dispatched.batches > 1);
}

TEST_CASE("a sender of batches to a receiver that takes frames one at a time delivers every frame once, in order, "
          "as single frames",
          "[transport][process][batch]") {
  const TransportProfile& transport = suite_transport();
  const std::string dispatch = GENERATE("inline", "thread");
  const Dispatched dispatched = run(transport, {32, false, dispatch, transport.work(kFrames)});
  CHECK(dispatched.batches == 0);
}

TEST_CASE("a sender of single frames to a receiver of batches delivers every frame once, in order",
          "[transport][process][batch]") {
  const TransportProfile& transport = suite_transport();
  const std::string dispatch = GENERATE("inline", "thread");
  const Dispatched dispatched = run(transport, {1, true, dispatch, transport.work(kFrames)});
  CHECK(dispatched.batches > 0);
}

TEST_CASE("a frameCount that is not a multiple of the batch ends with every frame delivered and acknowledged",
          "[transport][process][batch]") {
  const TransportProfile& transport = suite_transport();
  // 104 batches of 48 and one of 11; the window (256) is not a multiple of 48 either, so batches are cut short by
  // it too.
  run(transport, {48, true, "thread", 48 * 104 + 11});
}
