// Application contexts in one process joined by a bus: what one sends waits on the bus until the test pumps it to
// the target's bound handler, as a transport would hand it over, so that a publisher and its subscribers are
// tested through their real frames, step by step. A target can be given limited room (its sends then say
// would_block) or be lost (its sends fail as a dead connection's do). Posted tasks run when the bus is pumped.
#pragma once

#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "daqx/api/application.hpp"
#include "daqx/mempool/allocator.hpp"
#include "daqx/mempool/pool.hpp"

namespace daqx::streams::test {

class LoopContext;

class Bus {
 public:
  struct InFlight {
    Tid target;
    Frame frame;
  };
  void attach(Tid tid, LoopContext* context) { contexts_[tid] = context; }
  void room(Tid target, std::size_t frames) { room_[target] = frames; }
  void unlimited_room(Tid target) { room_.erase(target); }
  void lose(Tid target) { lost_.insert(target); }
  SendStatus send(Tid from, Tid target, std::uint16_t function, std::uint64_t transaction, mem::Ref& data,
                  std::uint8_t flags = 0) {
    if (lost_.count(target) != 0 || contexts_.count(target) == 0) {
      data.reset();
      return SendStatus::error;
    }
    if (auto it = room_.find(target); it != room_.end()) {
      if (it->second == 0) return SendStatus::would_block;
      --it->second;
    }
    Frame frame;
    frame.header.total_length = static_cast<std::uint32_t>(data.total_size());
    frame.header.target = target;
    frame.header.initiator = from;
    frame.header.function = function;
    frame.header.transaction = transaction;
    frame.header.flags = flags;
    frame.data = std::move(data);
    std::lock_guard lock(mutex_);
    flags_sent_[function].push_back(flags);
    queue_.push_back({target, std::move(frame)});
    return SendStatus::ok;
  }
  // Hands over every frame and runs every task, until nothing is left.
  void pump();
  std::size_t queued() {
    std::lock_guard lock(mutex_);
    return queue_.size();
  }
  // The header flags of every frame sent with `function`, in order.
  std::vector<std::uint8_t> flags_sent(std::uint16_t function) {
    std::lock_guard lock(mutex_);
    return flags_sent_[function];
  }

 private:
  std::map<Tid, LoopContext*> contexts_;
  std::map<Tid, std::size_t> room_;
  std::set<Tid> lost_;
  std::mutex mutex_;
  std::deque<InFlight> queue_;
  std::map<std::uint16_t, std::vector<std::uint8_t>> flags_sent_;
};

class LoopContext final : public ApplicationContext {
 public:
  LoopContext(Bus& bus, Tid tid, std::string name = "test")
      : bus_(bus), tid_(tid), name_(std::move(name)),
        pool_(mem::PoolConfig::geometric(name_ + "/pool", 256, 1u << 16, 1u << 20, std::size_t{16} << 20),
              mem::make_allocator("heap")) {
    bus_.attach(tid, this);
  }
  Tid tid() const noexcept override { return tid_; }
  const std::string& class_name() const noexcept override { return name_; }
  std::uint32_t instance() const noexcept override { return 0; }
  const std::string& name() const noexcept override { return name_; }
  const ParamSet& params() const noexcept override { return params_; }
  void bind(std::uint16_t function, FrameHandler handler) override { handlers_[function] = std::move(handler); }
  mem::Pool& pool() override { return pool_; }
  mem::Ref allocate_frame(std::size_t payload_bytes) noexcept override {
    return pool_.allocate_chain(kFrameHeaderSize + payload_bytes);
  }
  SendStatus send(Tid target, std::uint16_t function, std::uint64_t transaction, mem::Ref& frame,
                  std::uint8_t flags) noexcept override {
    return bus_.send(tid_, target, function, transaction, frame, flags);
  }
  void on_send_ready(std::function<void()>) override {}
  void on_pool_available(std::function<void()>) override {}
  bool post_task(std::function<void()> fn) override {
    std::lock_guard lock(tasks_mutex_);
    tasks_.push_back(std::move(fn));
    return true;
  }
  std::jthread start_worker(const std::string&, std::function<void(std::stop_token)> body) override {
    return std::jthread(std::move(body));
  }
  std::vector<ApplicationInfo> applications() const override { return {}; }
  void fail(const std::string& reason) override { throw std::runtime_error("fail: " + reason); }
  void log(LogLevel, const std::string&) override {}

  void deliver(Frame&& frame) {
    auto it = handlers_.find(frame.header.function);
    if (it != handlers_.end()) it->second(std::move(frame));
  }
  bool run_tasks() {
    std::deque<std::function<void()>> tasks;
    {
      std::lock_guard lock(tasks_mutex_);
      tasks.swap(tasks_);
    }
    for (auto& task : tasks) task();
    return !tasks.empty();
  }

 private:
  Bus& bus_;
  Tid tid_;
  std::string name_;
  ParamSet params_;
  mem::Pool pool_;
  std::map<std::uint16_t, FrameHandler> handlers_;
  std::mutex tasks_mutex_;
  std::deque<std::function<void()>> tasks_;
};

inline void Bus::pump() {
  for (bool worked = true; worked;) {
    worked = false;
    for (auto& [tid, context] : contexts_) worked = context->run_tasks() || worked;
    for (;;) {
      InFlight next;
      {
        std::lock_guard lock(mutex_);
        if (queue_.empty()) break;
        next = std::move(queue_.front());
        queue_.pop_front();
      }
      worked = true;
      if (auto it = contexts_.find(next.target); it != contexts_.end()) it->second->deliver(std::move(next.frame));
    }
  }
}

}  // namespace daqx::streams::test
