// evb::Monitor, a subscriber of a BU's stream of built events (docs/monitoring.md): in any context, over any
// transport, it subscribes at enable with the policy it is given and unsubscribes at stop, counts what it
// receives, what the publisher dropped for it and any gap in the sequence, and with verify checks each event as
// daqx-evb-dump --verify checks a file's: the record's structure and every test-mode super-fragment. The ready
// consumer of the stream, and the example of a subscriber application.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "daqx/api/application.hpp"
#include "daqx/api/counter_set.hpp"
#include "daqx/streams/policy.hpp"
#include "daqx/streams/subscriber.hpp"

namespace daqx::evb::monitor {

class Monitor final : public Application {
 public:
  static std::vector<ParamSpec> parameters();
  explicit Monitor(ApplicationContext& context);

  void configure() override;
  void enable() override;
  void stop() override;
  void halt() override;
  void report(MetricSink& sink) const override;

 private:
  // Dispatch thread: one event of the stream.
  void on_event(const streams::StreamEvent& event);
  // The event's record checked; "" or the first problem.
  std::string check(const streams::StreamEvent& event);

  // Set at configure, read on the dispatch thread after (enable posts nothing before it).
  Tid publisher_ = kNoTid;
  std::string stream_;
  streams::Policy policy_;
  bool verify_ = false;

  // Dispatch thread: the subscription the last event came in, its last sequence and its publisher's drops.
  std::uint64_t subscription_ = 0;
  std::uint64_t sequence_ = 0;
  std::uint64_t dropped_ = 0;
  std::vector<std::byte> contiguous_;  // an event in several blocks, gathered to be parsed
  std::uint32_t problems_logged_ = 0;

  // Published: this run's counts (restarted at enable).
  struct RunCounters : CounterSet {
    Counter events{*this, "events_received", "events received from the stream"};
    Counter bytes{*this, "bytes_received", "bytes of the events received"};
    Counter dropped{*this, "events_dropped_by_publisher",
                    "events the publisher dropped for this subscriber by its policy (the records' dropped field)"};
    Counter gaps{*this, "sequence_gaps", "records missing in a subscription's sequence (0: the protocol lost none)"};
    Counter verify_failures{*this, "verify_failures", "events whose record or super-fragments failed the check"};
    Counter corrupt{*this, "events_corrupt", "events their BU flagged corrupt"};
    Counter subscriptions{*this, "subscriptions", "subscriptions events came in (a new one after the publisher's halt)"};
    Counter last_event{*this, "last_event", "event id of the last event received", Metric::Kind::gauge};
  };
  RunCounters run_counters_;
  streams::Subscriber subscriber_;  // last: its handler uses what is above
};

}  // namespace daqx::evb::monitor
