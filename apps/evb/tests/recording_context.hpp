// An application context for driving the event builder's units in one process with fake peers: frames come
// from a real pool, what the unit sends is kept (or only counted, for the functions the test says), every batch
// send is recorded (its target, size and what was taken), the handlers it binds (of frames or of batches) are
// called by the test, and posted tasks run on the calling thread after the handler that posted them (one
// dispatch round). A target can be given limited room (its sends then say would_block), and the unit told it
// may send again, as a transport would. No ticker thread, no clock in the test: everything is driven step by step.
// Shared by the in-process tests (apps/evb/tests) and the units benchmark (bench/evb_units_bench.cpp).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "daqx/api/application.hpp"
#include "daqx/mempool/allocator.hpp"
#include "daqx/mempool/pool.hpp"

namespace daqx::evb::test {

class RecordingContext final : public ApplicationContext {
 public:
  struct Sent {
    Tid target;
    std::uint16_t function;
    mem::Ref frame;
  };
  // One call of send_batch: its first frame's target, how many frames it held, and how many were taken.
  struct BatchCall {
    Tid target;
    std::size_t frames;
    std::size_t sent;
  };

  // views: the pool's view descriptors (PoolConfig::views), for blocks of which a receiver makes views.
  RecordingContext(Tid tid, std::string class_name, ParamSet params, std::size_t pool_bytes = std::size_t{256} << 20,
                   std::size_t views = 0)
      : tid_(tid), class_name_(std::move(class_name)), name_(class_name_ + "/0"), params_(std::move(params)),
        pool_(pool_config(name_ + "/pool", pool_bytes, views), mem::make_allocator("heap")) {}

  // Frames of `function` go to `watcher` as they are sent and are let go after it, instead of kept (bulk data,
  // or more frames than are worth holding).
  using Watcher = std::function<void(Tid target, const mem::Ref& frame)>;
  void watch(std::uint16_t function, Watcher watcher) { watchers_[function] = std::move(watcher); }

  // Sends to `target` fail from now on as a lost connection does (SendStatus::error, the frame let go, nothing
  // kept): what a unit makes of a peer it can no longer reach.
  void lose_connection(Tid target) { lost_.push_back(target); }

  // target takes `frames` more frames, then says would_block until given room again (room(target, n) or
  // unlimited_room(target)); the unit hears of new room only through send_ready().
  void room(Tid target, std::size_t frames) { room_[target] = frames; }
  void unlimited_room(Tid target) { room_.erase(target); }
  // One dispatch round of the callback the unit gave on_send_ready (none: nothing happens).
  void send_ready() {
    if (send_ready_) run_round(send_ready_);
  }

  // One dispatch round: the handler bound to `function` gets a frame from `initiator` with this payload, then
  // the tasks it posted run.
  void deliver(std::uint16_t function, Tid initiator, const std::byte* payload, std::size_t bytes) {
    mem::Ref data = pool_.allocate_chain(kFrameHeaderSize + bytes);
    if (!data) throw std::runtime_error("RecordingContext: its pool is exhausted (frames not let go?)");
    std::memcpy(data.data() + kFrameHeaderSize, payload, bytes);
    deliver(function, initiator, std::move(data));
  }
  void deliver(std::uint16_t function, Tid initiator, const std::vector<std::byte>& payload) {
    deliver(function, initiator, payload.data(), payload.size());
  }
  // The same with a frame made elsewhere (a block another unit sent), header included. To a handler of batches
  // it comes as a batch of one, as the executive hands over a frame that arrived alone.
  void deliver(std::uint16_t function, Tid initiator, mem::Ref&& data) {
    Frame frame = received(function, tid_, initiator, std::move(data));
    in_round([&] { handler(function).take(std::span<Frame>(&frame, 1)); });
  }
  // Frames made elsewhere (header included) that arrived together, each from its initiator: one call of a
  // handler of batches, or one call per frame of a handler of frames (as the executive does).
  void deliver_batch(std::uint16_t function, std::vector<std::pair<Tid, mem::Ref>>&& frames) {
    std::vector<Frame> batch;
    batch.reserve(frames.size());
    for (auto& [initiator, data] : frames) batch.push_back(received(function, tid_, initiator, std::move(data)));
    in_round([&] { handler(function).take(std::span<Frame>(batch)); });
  }
  // A frame as a handler receives it: `data` (header included) sent by initiator to target.
  static Frame received(std::uint16_t function, Tid target, Tid initiator, mem::Ref&& data) {
    Frame frame;
    frame.header.total_length = static_cast<std::uint32_t>(data.total_size());
    frame.header.target = target;
    frame.header.initiator = initiator;
    frame.header.function = function;
    frame.data = std::move(data);
    return frame;
  }
  // Runs fn as the dispatch thread would (tasks it posts run after it).
  void run_round(const std::function<void()>& fn) {
    in_round_ = true;
    fn();
    while (!tasks_.empty()) {
      std::function<void()> task = std::move(tasks_.front());
      tasks_.pop_front();
      task();
    }
    in_round_ = false;
  }

  std::vector<Sent>& sent() noexcept { return sent_; }
  std::vector<BatchCall>& batch_calls() noexcept { return batch_calls_; }
  const std::vector<std::string>& failures() const noexcept { return failures_; }
  const std::string& condition() const noexcept { return condition_; }

  Tid tid() const noexcept override { return tid_; }
  const std::string& class_name() const noexcept override { return class_name_; }
  std::uint32_t instance() const noexcept override { return 0; }
  const std::string& name() const noexcept override { return name_; }
  const ParamSet& params() const noexcept override { return params_; }
  void bind(std::uint16_t function, FrameHandler handler) override { handlers_[function] = {std::move(handler), {}}; }
  void bind_batch(std::uint16_t function, BatchHandler handler) override {
    handlers_[function] = {{}, std::move(handler)};
  }
  mem::Pool& pool() override { return pool_; }
  mem::Ref allocate_frame(std::size_t payload_bytes) noexcept override {
    return pool_.allocate_chain(kFrameHeaderSize + payload_bytes);
  }
  SendStatus send(Tid target, std::uint16_t function, std::uint64_t, mem::Ref& frame, std::uint8_t) noexcept override {
    if (std::find(lost_.begin(), lost_.end(), target) != lost_.end()) {
      frame.reset();
      return SendStatus::error;
    }
    if (const auto it = room_.find(target); it != room_.end()) {
      if (it->second == 0) return SendStatus::would_block;
      --it->second;
    }
    if (const auto it = watchers_.find(function); it != watchers_.end()) {
      it->second(target, frame);
      frame.reset();
      return SendStatus::ok;
    }
    sent_.push_back({target, function, std::move(frame)});
    return SendStatus::ok;
  }
  // Frame by frame through send() (the API's own way), recorded as one call.
  BatchSendResult send_batch(std::span<OutgoingFrame> frames) noexcept override {
    const BatchSendResult result = ApplicationContext::send_batch(frames);
    batch_calls_.push_back({frames.empty() ? kNoTid : frames.front().target, frames.size(), result.sent});
    return result;
  }
  void on_send_ready(std::function<void()> callback) override { send_ready_ = std::move(callback); }
  void on_pool_available(std::function<void()>) override {}
  // From the control thread's hooks (configure, enable) as from handlers: queued and run in this round, or at once.
  bool post_task(std::function<void()> fn) override {
    if (in_round_) {
      tasks_.push_back(std::move(fn));
    } else {
      run_round(fn);
    }
    return true;
  }
  std::jthread start_worker(const std::string&, std::function<void(std::stop_token)>) override { return {}; }
  std::vector<ApplicationInfo> applications() const override { return {}; }
  void fail(const std::string& reason) override { failures_.push_back(reason); }
  void set_condition(const std::string& condition) override { condition_ = condition; }
  void log(LogLevel, const std::string&) override {}

  static mem::PoolConfig pool_config(const std::string& name, std::size_t pool_bytes, std::size_t views) {
    mem::PoolConfig config = mem::PoolConfig::geometric(name, 256, 1u << 20, 4u << 20, pool_bytes);
    config.views = views;
    return config;
  }

 private:
  // What bind or bind_batch gave for a function: exactly one of the two.
  struct Bound {
    FrameHandler frames;
    BatchHandler batches;
    void take(std::span<Frame> batch) const {
      if (batches) {
        batches(batch);
        return;
      }
      for (Frame& frame : batch) frames(std::move(frame));
    }
  };
  const Bound& handler(std::uint16_t function) const {
    const auto it = handlers_.find(function);
    if (it == handlers_.end()) throw std::logic_error("RecordingContext: no handler bound for the function");
    return it->second;
  }
  // fn in this dispatch round if one runs (one of several frames of it), else in a round of its own.
  void in_round(const std::function<void()>& fn) {
    if (in_round_) fn();
    else run_round(fn);
  }

  Tid tid_;
  std::string class_name_;
  std::string name_;
  ParamSet params_;
  mem::Pool pool_;
  std::map<std::uint16_t, Bound> handlers_;
  std::map<std::uint16_t, Watcher> watchers_;
  std::vector<Sent> sent_;
  std::vector<BatchCall> batch_calls_;
  std::map<Tid, std::size_t> room_;  // targets with limited room: frames they take before would_block
  std::function<void()> send_ready_;
  std::vector<Tid> lost_;  // targets whose connection is lost
  std::deque<std::function<void()>> tasks_;
  bool in_round_ = false;
  std::vector<std::string> failures_;
  std::string condition_;
};

}  // namespace daqx::evb::test
