// Asks many executives one GET each, per round, over a fixed pool of threads: what watching a partition of any
// size costs is that many threads and one request per context per round (daqx-launch --drive and its dashboard,
// daqxctl watch, every executive's partition view).
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "daqx/executive/control_client.hpp"

namespace daqx {

class ContextPoller {
 public:
  static constexpr unsigned kDefaultThreads = 8;

  // `threads` workers (at least 1), started now and kept until the poller is destroyed. Every request presents
  // `access`.
  explicit ContextPoller(unsigned threads = kDefaultThreads, ControlAccess access = default_control_access());
  ~ContextPoller();  // stops, as stop() does, and joins the workers
  ContextPoller(const ContextPoller&) = delete;
  ContextPoller& operator=(const ContextPoller&) = delete;

  // Called on a worker thread with the index of the context in the round's `urls` and its answer (status 0 and
  // the reason when it did not answer); must not throw.
  using Answered = std::function<void(std::size_t index, HttpReply reply)>;

  // GET `path` of every URL of `urls`, each request bounded by its own `timeout`, at most threads() at once, so
  // that a context that hangs costs one worker `timeout` and delays no other answer. Returns when every one has
  // been answered (or stop() was called: those not asked yet are not). Rounds from several threads take turns.
  void round(const std::vector<std::string>& urls, const std::string& path, std::chrono::milliseconds timeout,
             const Answered& answered);

  // Ends the round under way after the requests in flight, and every later round at once. Idempotent.
  void stop();

  unsigned threads() const noexcept;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace daqx
