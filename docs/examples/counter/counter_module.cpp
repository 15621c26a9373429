// demo::Counter, the complete module of docs/writing-an-application.md (quoted there in full). On enable each
// Counter sends `count` frames to each of its `peers`; every Counter counts the frames it receives. Built out of
// tree against an installed daqx (CMakeLists.txt beside it) and run by the installed daqx-executive (counter.xml).
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "daqx/api/counter_set.hpp"
#include "daqx/api/module.hpp"

namespace {

// The function code of the frames a Counter sends: senders address it, the handler bound to it receives them.
constexpr std::uint16_t kCountedFrame = 1;

// Each counter declared once, with its name and help: the set reports and resets all of them.
struct CounterCounters : daqx::CounterSet {
  daqx::Counter counted_frames{*this, "counted_frames", "frames received"};
  daqx::Counter counted_bytes{*this, "counted_bytes", "payload bytes received"};
  daqx::Counter sent_frames{*this, "sent_frames", "frames sent"};
};

class Counter final : public daqx::Application {
 public:
  explicit Counter(daqx::ApplicationContext& context) : Application(context) {
    // Handlers, tasks and callbacks run one at a time (by default on the dispatch thread): no locks between them.
    context.bind(kCountedFrame, [this](daqx::Frame&& frame) {
      counters_.counted_frames.add_single_writer();  // only the dispatch thread writes them
      counters_.counted_bytes.add_single_writer(frame.payload_size());
      // frame.data is ours: letting it go here returns its blocks to the sender's pool (or forward it: no copy).
    });
    // A send that said would_block, or an allocation that found the pool empty, is retried when it may succeed.
    context.on_send_ready([this] { send_more(); });
    context.on_pool_available([this] { send_more(); });
  }

  void configure() override {
    // The executive has checked the values against the declarations below before anything starts.
    peers_ = context().params().applications("peers");
    count_ = context().params().unsigned_integer("count");
  }

  // The hooks run on the control thread; the frames go from the dispatch thread, where all of the run's state
  // lives (tasks run in the order they were posted, so a stop's task always comes after its enable's).
  void enable() override {
    context().post_task([this] {
      next_ = 0;
      sending_ = true;
      send_more();
    });
  }
  void stop() override {
    context().post_task([this] {
      sending_ = false;
      held_.reset();  // a frame that waited for on_send_ready goes back to the pool
    });
  }

  void report(daqx::MetricSink& sink) const override { counters_.report(sink); }

 private:
  // Sends what is left of the run's frames (round robin over the peers) as long as the pool and the transports
  // take them; whichever said "not now" calls it again through on_pool_available or on_send_ready.
  void send_more() {
    const std::uint64_t total = count_ * peers_.size();
    while (sending_ && next_ < total) {
      if (!held_) {
        held_ = context().allocate_frame(sizeof next_);
        if (!held_) return;  // the pool is exhausted: never spin on the dispatch thread
        std::memcpy(held_.data() + daqx::kFrameHeaderSize, &next_, sizeof next_);  // the payload: a sequence number
      }
      const daqx::Tid peer = peers_[next_ % peers_.size()];
      switch (context().send(peer, kCountedFrame, next_, held_)) {
        case daqx::SendStatus::ok:  // the frame is gone (held_ is empty again)
          ++next_;
          counters_.sent_frames.add_single_writer();
          break;
        case daqx::SendStatus::would_block:  // held_ is still ours
          return;
        case daqx::SendStatus::no_route:
          held_.reset();
          sending_ = false;
          context().fail("no route to application " + std::to_string(peer));
          return;
        case daqx::SendStatus::error:
          sending_ = false;
          context().fail("the connection to application " + std::to_string(peer) + " failed");
          return;
      }
    }
  }

  // Set in configure(), read by the dispatch thread after enable()'s task (which the post orders after them).
  std::vector<daqx::Tid> peers_;
  std::uint64_t count_ = 0;
  // The dispatch thread's alone.
  bool sending_ = false;
  std::uint64_t next_ = 0;  // frames of this run sent so far
  daqx::mem::Ref held_;     // the frame allocated and not yet taken by send
  // Written by the dispatch thread, read by report() on the control thread (relaxed atomics).
  CounterCounters counters_;
};

}  // namespace

DAQX_MODULE {
  static const daqx::ModuleDescriptor descriptor{
      daqx::kModuleAbiVersion,
      "demo-counter",
      {daqx::ApplicationClass{
          "demo::Counter",
          "sends count frames to each peer on enable and counts the frames it receives",
          {daqx::ParamSpec{"peers", daqx::ParamType::applications, "", "", "applications to send frames to", {}, {}},
           daqx::ParamSpec{"count", daqx::ParamType::unsigned_integer, "100", "frames",
                           "frames sent to each peer on enable", 0, 1000000}},
          [](daqx::ApplicationContext& c) { return std::make_unique<Counter>(c); }}},
      {}};
  return &descriptor;
}
