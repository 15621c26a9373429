// Transport suite, coalescing: in throughput mode frames of every size (tiny, medium, larger than a pack,
// chained across blocks) go out packed together and still arrive one by one, in order, with their patterns;
// every block goes back; and a receiver that stops releasing stalls the sender without an error.
#include <catch2/catch.hpp>

#include <numeric>
#include <string>
#include <vector>

#include "suite.hpp"

using namespace daqx::test;

namespace {

constexpr std::uint32_t kSender = 11, kReceiver = 21;
// Tiny frames pack many to a message; 300000 B is larger than a pack (256 KiB) and than a receive buffer;
// 1600000 B is a chain of two application blocks (1 MiB is the largest).
const std::vector<std::uint64_t> kSizes{64, 100, 40, 1000, 64, 70000, 200, 300000, 64, 3000, 1600000, 48};
constexpr int kFrames = 1200;  // a hundred rounds of the sizes

std::string sizes_text() {
  std::string text;
  for (std::uint64_t size : kSizes) {
    if (!text.empty()) text.push_back(',');
    text.append(std::to_string(size));
  }
  return text;
}

// The messages the run's frames would take at the least if none shared one: a frame each, large ones one per
// 128 KiB receive buffer (the message transports' default).
double messages_unpacked() {
  double messages = 0;
  for (int i = 0; i < kFrames; ++i) messages += static_cast<double>((kSizes[i % kSizes.size()] + 32 + 131071) / 131072);
  return messages;
}

double bytes_of_run() {
  double bytes = 0;
  for (int i = 0; i < kFrames; ++i) bytes += static_cast<double>(kSizes[i % kSizes.size()]);
  return bytes;
}

void run_mixed_sizes(const TransportProfile& transport, const PartitionProperties& receiver_properties) {
  Host a, b;
  PartitionBuilder partition("coalescing");
  add_nton_context(partition, transport, a, Traffic::throughput)
      .context.application("nton::Receiver", kReceiver, 0, "data")
      .properties(receiver_properties);
  add_nton_context(partition, transport, b, Traffic::throughput)
      .context.application("nton::Sender", kSender, 0, "data")
      .properties({{"frameSizes", sizes_text(), ""},
                   {"frameCount", std::to_string(kFrames), ""},
                   {"window", "512", ""},
                   {"ackEvery", "64", ""},
                   {"pattern", "true", ""},
                   {"receivers", "21", ""}});
  const std::string path = write_file("coalescing.xml", partition.xml());
  ExecutiveProcess receiver(path, a.url()), sender(path, b.url());
  bring_up({&receiver, &sender});
  const ExecutiveProcess::Progress received = receiver.wait_progress(kReceiver, "frames_received", kFrames);
  INFO(received.trace << "\n" << sender.output() << receiver.output());
  REQUIRE(received.reached);
  CHECK(receiver.metric(kReceiver, "frames_received") == kFrames);
  CHECK(receiver.metric(kReceiver, "bytes_received") == bytes_of_run());
  CHECK(receiver.metric(kReceiver, "pattern_errors") == 0);
  CHECK(receiver.metric(kReceiver, "sequence_errors") == 0);
  CHECK(receiver.metric(kReceiver, "malformed_frames") == 0);
  REQUIRE(sender.wait_metric(kSender, "done", 1));
  CHECK(sender.metric(kSender, "send_errors") == 0);
  CHECK(transport_metric(sender, "send_errors") == 0);
  CHECK(transport_metric(receiver, "bad_streams") == 0);
  // Packed: the frames went out in fewer messages than they would take one frame to a message.
  INFO("sender: " << transport_metric(sender, "frames_sent") << " frames in " << transport_metric(sender, "messages_sent")
                  << " messages; unpacked they would take at least " << messages_unpacked());
  CHECK(transport_metric(sender, "messages_sent") < messages_unpacked());
  // Every block back: the receive buffers (also those whose frames were handed out as windows), the frames.
  stop_and_check_drained(sender, receiver, transport);
}

}  // namespace

TEST_CASE("packed frames of every size arrive one by one, in order, with their patterns, and every block goes back",
          "[transport][process][coalescing][in-process]") {
  const TransportProfile& transport = suite_transport();
  if (!transport.capabilities.coalescing) skip_test("it does not pack frames together");
  run_mixed_sizes(transport, {});
}

TEST_CASE("a receiver that holds packed frames stalls the sender without errors, and the run completes after",
          "[transport][process][coalescing][faults][in-process]") {
  const TransportProfile& transport = suite_transport();
  if (!transport.capabilities.coalescing) skip_test("it does not pack frames together");
  // It keeps every frame for 3 s (their buffers stay taken), then takes them all, in order.
  run_mixed_sizes(transport, {{"holdFor", "3", ""}});
}
