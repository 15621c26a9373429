// Rounds of one GET per context over a ControlRequestPool: watching a partition of any size costs the pool's fixed
// threads and one request per context per round (daqx-launch --drive and its dashboard, daqxctl watch, every
// executive's partition view).
#pragma once

#include <chrono>
#include <memory>
#include <stop_token>
#include <string>
#include <vector>

#include "daqx/control/control_request_pool.hpp"

namespace daqx {

class ContextPoller {
 public:
  // Rounds over `pool`, shared with its other users (it must outlive the poller).
  explicit ContextPoller(ControlRequestPool& pool);
  // Rounds over a pool of its own: up to `fanout` requests in flight, every request presenting `access`.
  explicit ContextPoller(unsigned fanout, ControlAccess access = default_control_access());
  ~ContextPoller();
  ContextPoller(const ContextPoller&) = delete;
  ContextPoller& operator=(const ContextPoller&) = delete;

  using Answered = ControlRequestPool::Answered;

  // GET `path` of every URL of `urls`, each request bounded by its own `timeout`, at most the pool's fan-out at
  // once, so that a context that hangs delays no other answer. Returns when every one has been answered (or
  // stop() was called: those not asked yet are not).
  void round(const std::vector<std::string>& urls, const std::string& path, std::chrono::milliseconds timeout,
             const Answered& answered);

  // Ends this poller's round under way after its requests in flight, and its every later round at once; the
  // pool's other users go on. Idempotent.
  void stop();

  ControlRequestPool& pool() noexcept { return *pool_; }

 private:
  std::unique_ptr<ControlRequestPool> own_;  // when not shared
  ControlRequestPool* pool_;
  std::stop_source stopping_;
};

}  // namespace daqx
