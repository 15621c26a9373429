// What the three event-builder applications share about threads: every piece of run state lives on the
// application's dispatch thread (handlers run there one at a time, so the state needs no locks); the control
// thread's hooks (enable, stop, ...) and the ticker reach it through posted tasks.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <future>
#include <mutex>
#include <random>
#include <stdexcept>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "daqx/api/application.hpp"

namespace daqx::evb {

using Clock = std::chrono::steady_clock;

inline Clock::duration seconds(double s) {
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
}
inline double seconds_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// Runs fn on the dispatch thread and waits for it (control thread only). Throws if it does not run in time,
// which puts the application in Failed rather than hanging the control thread.
inline void run_on_dispatch(ApplicationContext& context, std::function<void()> fn,
                            std::chrono::seconds limit = std::chrono::seconds(20)) {
  auto done = std::make_shared<std::promise<void>>();
  std::future<void> finished = done->get_future();
  context.post_task([done, fn = std::move(fn)] {
    try {
      fn();
      done->set_value();
    } catch (...) {
      done->set_exception(std::current_exception());
    }
  });
  if (finished.wait_for(limit) != std::future_status::ready)
    throw std::runtime_error("the dispatch thread did not answer within 20 s");
  finished.get();
}

// The longest period of an RU's or a BU's ticker; shorter when its heartbeat or request interval asks for it (half
// of that). Their ticks only back up what their frame handlers and send-ready and pool-available callbacks do at
// once (retries, pumps), and keep liveness and gauges, which live on the scale of the intervals: a tick costs a
// context two thread wake-ups, which at 100 per second made most of the CPU of a partition of hundreds of contexts
// sharing a few cores.
inline constexpr double kMaxTickPeriod = 0.05;

// A worker that posts `tick` to the dispatch thread every period, never more than one at a time (a busy
// dispatch thread gets one tick when it is free, not a backlog).
class Ticker {
 public:
  void start(ApplicationContext& context, Clock::duration period, std::function<void()> tick) {
    stop();
    tick_ = std::move(tick);
    pending_.store(false);
    ApplicationContext* target = &context;
    thread_ = context.start_worker("ticker", [this, target, period](std::stop_token stop) {
      std::mutex m;
      std::condition_variable_any cv;
      std::unique_lock lock(m);
      while (!stop.stop_requested()) {
        cv.wait_for(lock, stop, period, [] { return false; });
        if (stop.stop_requested()) break;
        // A task that could not be posted does not count as pending: the next period tries again.
        if (!pending_.exchange(true) && !target->post_task([this] {
              pending_.store(false);
              if (tick_) tick_();
            }))
          pending_.store(false);
      }
    });
  }
  // Joins the worker; a tick already posted still runs (tick_ stays valid until the next start()).
  void stop() {
    if (thread_.joinable()) {
      thread_.request_stop();
      thread_.join();
    }
  }
  ~Ticker() { stop(); }

 private:
  std::function<void()> tick_;
  std::atomic<bool> pending_{false};
  std::jthread thread_;
};

// A random 64-bit number per enable: tells a restarted unit from the one before it.
inline std::uint64_t new_incarnation() {
  std::random_device device;
  return (std::uint64_t{device()} << 32) ^ device() ^
         static_cast<std::uint64_t>(Clock::now().time_since_epoch().count());
}

// The one application a selector parameter must name (an RU's or BU's "evm"); configure fails otherwise.
inline Tid exactly_one(const ParamSet& params, const std::string& name) {
  const std::vector<Tid>& tids = params.applications(name);
  if (tids.size() != 1)
    throw std::runtime_error(name + ": '" + params.text(name) + "' selects " + std::to_string(tids.size()) +
                             " applications; exactly one is needed");
  return tids.front();
}

}  // namespace daqx::evb
