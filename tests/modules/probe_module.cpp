// Test module: an application that records where its frames live (to prove direct hand-over copies
// nothing) and that can be told to fail in a lifecycle hook (to test the state machine).
#include <atomic>
#include <chrono>
#include <thread>
#include <cstring>
#include <stdexcept>

#include "daqx/api/module.hpp"

namespace {

constexpr std::uint16_t kProbeFunction = 7;

class Probe final : public daqx::Application {
 public:
  explicit Probe(daqx::ApplicationContext& context) : daqx::Application(context) {
    context.bind(kProbeFunction, [this](daqx::Frame&& frame) {
      received_address_.store(reinterpret_cast<std::uintptr_t>(frame.data.head()->memory()));
      received_initiator_.store(frame.header.initiator);
      std::uint64_t word = 0;
      std::memcpy(&word, frame.payload(), sizeof word);
      received_word_.store(word);
      received_.fetch_add(1);
    });
  }
  void configure() override {
    maybe_delay("configure");
    maybe_fail("configure");
  }
  void enable() override {
    maybe_delay("enable");
    maybe_fail("enable");
    for (daqx::Tid peer : context().params().applications("peer")) {
      daqx::mem::Ref frame = context().allocate_frame(sizeof(std::uint64_t));
      if (!frame) throw std::runtime_error("pool exhausted");
      std::uint64_t word = 0x5eed0000ULL + context().tid();
      std::memcpy(frame.data() + daqx::kFrameHeaderSize, &word, sizeof word);
      sent_address_.store(reinterpret_cast<std::uintptr_t>(frame.head()->memory()));
      daqx::SendStatus status = context().send(peer, kProbeFunction, 1, frame);
      if (status != daqx::SendStatus::ok)
        throw std::runtime_error("send to " + std::to_string(peer) + ": " + std::string(daqx::to_string(status)));
      sent_.fetch_add(1);
    }
  }
  void stop() override { maybe_fail("stop"); }
  void report(daqx::MetricSink& sink) const override {
    sink.counter("probe_sent", static_cast<double>(sent_.load()), "frames sent");
    sink.counter("probe_received", static_cast<double>(received_.load()), "frames received");
    // Addresses fit a double exactly (48-bit user space).
    sink.gauge("probe_sent_block_address", static_cast<double>(sent_address_.load()), "block address of the last send");
    sink.gauge("probe_received_block_address", static_cast<double>(received_address_.load()),
               "block address of the last receive");
    sink.gauge("probe_received_initiator", static_cast<double>(received_initiator_.load()), "initiator TID");
    sink.gauge("probe_received_word", static_cast<double>(received_word_.load()), "payload word");
  }

 private:
  // A slow hook, for tests of what the control server does while one runs.
  void maybe_delay(const char* hook) {
    if (context().params().string("delayIn") == hook)
      std::this_thread::sleep_for(std::chrono::milliseconds(context().params().unsigned_integer("delayMs")));
  }
  void maybe_fail(const char* hook) {
    if (context().params().string("failIn") != hook) return;
    const std::string reason = context().params().string("failReason");
    throw std::runtime_error(reason.empty() ? std::string("told to fail in ") + hook : reason);
  }
  std::atomic<std::uint64_t> sent_{0};
  std::atomic<std::uint64_t> received_{0};
  std::atomic<std::uintptr_t> sent_address_{0};
  std::atomic<std::uintptr_t> received_address_{0};
  std::atomic<std::uint32_t> received_initiator_{0};
  std::atomic<std::uint64_t> received_word_{0};
};

}  // namespace

DAQX_MODULE {
  static const daqx::ModuleDescriptor descriptor{
      daqx::kModuleAbiVersion,
      "test-probe",
      {daqx::ApplicationClass{
          "test::Probe",
          "sends one frame to each peer on enable and records block addresses",
          {daqx::ParamSpec{"peer", daqx::ParamType::applications, "", "", "applications to send one frame to on enable", {}, {}},
           daqx::ParamSpec{"failIn", daqx::ParamType::string, "", "", "hook that throws: configure, enable or stop", {}, {}},
           daqx::ParamSpec{"failReason", daqx::ParamType::string, "", "", "what the failing hook says (empty: told to fail in HOOK)", {}, {}},
           daqx::ParamSpec{"delayIn", daqx::ParamType::string, "", "", "hook that sleeps delayMs first: configure or enable", {}, {}},
           daqx::ParamSpec{"delayMs", daqx::ParamType::unsigned_integer, "0", "ms", "how long delayIn sleeps", 0, 60000},
           daqx::ParamSpec{"level", daqx::ParamType::unsigned_integer, "1", "", "a bounded number, for validation tests", 1, 10}},
          [](daqx::ApplicationContext& c) { return std::make_unique<Probe>(c); }}},
      {}};
  return &descriptor;
}
