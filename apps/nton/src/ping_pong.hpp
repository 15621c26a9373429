// nton::PingPong: round-trip latency between two applications. The ping sends a frame, the pong sends the
// same frame back, and the ping keeps every round-trip time after the warmup for min, median, p99 and max.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "daqx/apps/latency.hpp"
#include "daqx/api/application.hpp"
#include "daqx/api/counter_set.hpp"

namespace daqx::nton {
using namespace daqx::apps;  // parameter helpers, rate meters, latency summaries, wake-ups

enum class PingPongRole { ping, pong };

struct PingPongConfiguration {
  PingPongRole role = PingPongRole::pong;  // ping: measures round trips; pong: echoes every ping it gets
  std::vector<Tid> peers;                  // resolved from "peer"; the ping sends to the first that is not itself
  std::uint64_t frame_size = 64;           // payload bytes of a ping, including its 16-byte header
  std::uint64_t count = 10000;             // round trips measured after the warmup; 0: until stop
  std::uint64_t warmup = 100;              // round trips before measuring (connections, caches, page faults)
};

// Round-trip times in microseconds, written by the dispatch thread and copied by report() while a run goes
// on: atomics, so the copy is race-free (relaxed stores cost what plain ones do).
struct RoundTripSamples {
  explicit RoundTripSamples(std::size_t capacity) : values(capacity) {}
  std::vector<std::atomic<double>> values;  // sample i at i % capacity (a ring when count is 0)
  std::atomic<std::uint64_t> taken{0};      // samples written; published after the value
};

// Counts of one run, restarted at its start; written by the dispatch thread only.
struct PingPongCounters : CounterSet {
  Counter round_trips{*this, "round_trips", "round trips completed, warmup included (ping)"};
  Counter echoes{*this, "echoes", "pings echoed back (pong)"};
  Counter sends_deferred{*this, "sends_deferred", "sends refused for lack of room at the target, retried when told"};
  Counter stale_frames{*this, "stale_frames", "pongs that were not for the round trip in flight, ignored"};
};

class PingPong final : public Application {
 public:
  static std::vector<ParamSpec> parameters();

  explicit PingPong(ApplicationContext& context);

  void configure() override;
  void enable() override;
  void stop() override;
  void halt() override;
  void report(MetricSink& sink) const override;

 private:
  using Clock = std::chrono::steady_clock;

  // Dispatch thread.
  void start(const PingPongConfiguration& config, std::shared_ptr<RoundTripSamples> samples);
  void launch();
  void send_ping();
  void on_ping(Frame&& frame);
  void on_pong(Frame&& frame);
  void echo(Tid to, std::uint64_t transaction, mem::Ref& data);
  void retry();
  void finish();
  void end_run();

  // Control thread: runs fn on the dispatch thread and waits (bounded) until it has run.
  void run_on_dispatch_thread(std::function<void()> fn);

  PingPongConfiguration config_;  // control thread; the dispatch thread gets a copy at enable
  // Guards samples_ between configure() and report(), which may run on different control threads; never
  // taken on the data path.
  mutable std::mutex samples_mutex_;
  std::shared_ptr<RoundTripSamples> samples_;

  // Owned by the dispatch thread.
  PingPongConfiguration settings_;
  std::shared_ptr<RoundTripSamples> measuring_;
  Tid target_ = kNoTid;
  bool running_ = false;
  bool waiting_for_pool_ = false;
  std::uint64_t round_ = 0;  // the round trip in flight, from 1
  Clock::time_point sent_at_{};
  mem::Ref held_;  // the ping frame while it waits to be (re)sent
  struct PendingEcho {
    Tid to = kNoTid;
    std::uint64_t transaction = 0;
    mem::Ref data;
  };
  std::vector<PendingEcho> pending_echoes_;  // pongs that would block, sent on on_send_ready

  // Written by the dispatch thread, read by report().
  PingPongCounters counters_;
  std::atomic<bool> done_{false};
  std::atomic<std::uint64_t> summary_count_{0};
  LatencyHistogram round_trip_;  // every measured round trip (after the warmup), for /metrics
  std::atomic<double> rtt_min_{0};
  std::atomic<double> rtt_median_{0};
  std::atomic<double> rtt_p99_{0};
  std::atomic<double> rtt_max_{0};
};

}  // namespace daqx::nton
