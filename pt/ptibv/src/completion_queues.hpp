// The completion queues one of ptibv's threads serves, on one completion channel. Each queue pair reserves, in
// one of them, the entries its work requests may complete at once, so that no queue can overflow (an overflow
// is fatal to every queue pair on it). When no queue has room for another queue pair a new one is created:
// how many connections a context holds is then bounded by the device's number of completion queues (max_cq,
// thousands on an HCA), not by the entries of one queue (about 480 outgoing connections at the defaults).
#pragma once

#include <infiniband/verbs.h>

#include <atomic>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

namespace daqx::ptibv {

struct CompletionQueue {
  ibv_cq* cq = nullptr;
  std::size_t reserved = 0;  // entries the queue pairs on it may need at once
  unsigned unacked = 0;      // completion events taken from the channel and not yet acknowledged
  bool armed = false;        // an event is asked for on its next completion
};

class CompletionQueues {
 public:
  CompletionQueues() = default;
  ~CompletionQueues() { close(); }
  CompletionQueues(const CompletionQueues&) = delete;
  CompletionQueues& operator=(const CompletionQueues&) = delete;

  // Creates the completion channel (unless busy polling) and the first queue of `entries`; throws with the
  // reason. Later queues have as many entries.
  void open(ibv_context* context, std::size_t entries, bool with_channel);
  // The channel's descriptor to wait on; -1 when busy polling.
  int channel_fd() const noexcept { return channel_ != nullptr ? channel_->fd : -1; }
  std::size_t entries() const noexcept { return entries_; }
  // Queues open now; any thread may read it (for the status pages).
  std::size_t count() const noexcept { return count_.load(std::memory_order_relaxed); }
  CompletionQueue& first() noexcept { return *queues_.front(); }

  // A queue with room for `need` more entries, created if none has; nullptr with the reason in error when the
  // device refuses another queue or `need` exceeds a whole queue.
  CompletionQueue* reserve(std::size_t need, std::string& error);
  void release(CompletionQueue& queue, std::size_t need) noexcept;

  // Polls every queue: up to `rounds` batches of `batch` completions each, handed to `completion`. Returns
  // whether there was any.
  template <typename Completion>
  bool poll(int rounds, Completion&& completion) {
    bool worked = false;
    constexpr int kBatch = 32;
    ibv_wc completions[kBatch];
    for (auto& queue : queues_) {
      for (int round = 0; round < rounds; ++round) {
        const int count = ibv_poll_cq(queue->cq, kBatch, completions);
        if (count <= 0) break;
        worked = true;
        for (int i = 0; i < count; ++i) completion(completions[i]);
        if (count < kBatch) break;
      }
    }
    return worked;
  }

  // Before the thread sleeps: asks for an event on each queue's next completion. Returns true when it asked
  // for any (the caller polls once more: a completion that came in between would otherwise wait for the next).
  bool arm();
  // After the channel's descriptor woke the thread: takes its events and acknowledges them in batches.
  void take_events();
  // Destroys every queue and the channel; after the queue pairs on them.
  void close() noexcept;

 private:
  CompletionQueue* create(std::string& error);

  ibv_context* context_ = nullptr;
  ibv_comp_channel* channel_ = nullptr;
  std::size_t entries_ = 0;
  std::vector<std::unique_ptr<CompletionQueue>> queues_;
  std::atomic<std::size_t> count_{0};
};

}  // namespace daqx::ptibv
