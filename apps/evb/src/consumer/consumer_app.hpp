// evb::consumer::Consumer, a downstream application for tests and examples: it publishes a consumer that a BU with
// output "consumer" hands its built events to, checks them on its own worker thread (optionally slowly, to
// exercise the BU's throttling) and lets them go.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "daqx/evb/consumer.hpp"
#include "daqx/api/application.hpp"
#include "daqx/api/counter_set.hpp"
#include "common/dispatch.hpp"

namespace daqx::evb::consumer {

class Consumer final : public Application {
 public:
  static std::vector<ParamSpec> parameters();
  explicit Consumer(ApplicationContext& context);
  ~Consumer() override;

  void configure() override;
  void enable() override;
  void stop() override;
  void halt() override;
  void report(MetricSink& sink) const override;

 private:
  void consume(BuiltEvent&& event);
  void work(std::stop_token stop);
  void stop_worker();

  std::string name_;
  double delay_us_ = 0;
  bool verify_ = true;
  const void* published_ = nullptr;

  std::mutex mutex_;
  std::condition_variable_any changed_;
  std::deque<BuiltEvent> queue_;
  std::jthread worker_;

  // Published: what the worker looked at this run (restarted at enable), and the queue now.
  struct RunCounters : CounterSet {
    Counter events{*this, "events", "events consumed"};
    Counter bytes{*this, "bytes", "bytes of the events consumed"};
    Counter incomplete{*this, "events_incomplete", "events flagged incomplete"};
    Counter corrupt{*this, "events_corrupt", "events flagged corrupt by their BU"};
    Counter check_failures{*this, "check_failures", "fragments that failed this consumer's own check"};
  };
  struct Gauges : CounterSet {
    Counter queued{*this, "queued", "events waiting for the worker", Metric::Kind::gauge};
  };
  RunCounters run_counters_;
  Gauges gauges_;
};

}  // namespace daqx::evb::consumer
