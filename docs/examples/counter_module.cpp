// The module of docs/writing-an-application.md: built out of tree with find_package(daqx) by the install
// test and loaded by an installed daqx-executive. Each demo::Counter sends `count` frames to its peers on
// enable and counts the frames it receives.
#include <atomic>
#include <cstring>
#include <stdexcept>

#include "daqx/api/module.hpp"

namespace {

constexpr std::uint16_t kCount = 1;  // function code of the counted frames

class Counter final : public daqx::Application {
 public:
  explicit Counter(daqx::ApplicationContext& context) : Application(context) {
    // Handlers run on this application's dispatch thread, one at a time: no locks between them.
    context.bind(kCount, [this](daqx::Frame&& frame) {
      received_.fetch_add(1, std::memory_order_relaxed);
      bytes_.fetch_add(frame.payload_size(), std::memory_order_relaxed);
      // frame.data is ours: letting it go here returns its blocks to their pool.
    });
  }

  void enable() override {
    std::uint64_t count = context().params().unsigned_integer("count");
    for (daqx::Tid peer : context().params().applications("peers")) {
      for (std::uint64_t i = 0; i < count; ++i) {
        daqx::mem::Ref frame = context().allocate_frame(sizeof i);
        if (!frame) throw std::runtime_error("pool exhausted");  // a real application would back off
        std::memcpy(frame.data() + daqx::kFrameHeaderSize, &i, sizeof i);
        if (context().send(peer, kCount, i, frame) != daqx::SendStatus::ok)
          throw std::runtime_error("peer " + std::to_string(peer) + " cannot take frames");
        sent_.fetch_add(1, std::memory_order_relaxed);
      }
    }
  }

  void report(daqx::MetricSink& sink) const override {
    sink.counter("counted_frames", static_cast<double>(received_.load()), "frames received");
    sink.counter("counted_bytes", static_cast<double>(bytes_.load()), "payload bytes received");
    sink.counter("sent_frames", static_cast<double>(sent_.load()), "frames sent");
  }

 private:
  std::atomic<std::uint64_t> received_{0};
  std::atomic<std::uint64_t> bytes_{0};
  std::atomic<std::uint64_t> sent_{0};
};

}  // namespace

DAQX_MODULE {
  static const daqx::ModuleDescriptor descriptor{
      daqx::kModuleAbiVersion,
      "demo-counter",
      {daqx::ApplicationClass{
          "demo::Counter",
          "sends count frames to each peer on enable and counts what it receives",
          {daqx::ParamSpec{"peers", daqx::ParamType::applications, "", "", "applications to send frames to", {}, {}},
           daqx::ParamSpec{"count", daqx::ParamType::unsigned_integer, "100", "frames",
                           "frames sent to each peer on enable (at most the inbox size)", 0, 1000}},
          [](daqx::ApplicationContext& c) { return std::make_unique<Counter>(c); }}},
      {}};
  return &descriptor;
}
