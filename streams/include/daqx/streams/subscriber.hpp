// streams::Subscriber, owned by an application that subscribes to streams of publishers in any context: it
// subscribes (again every second until accepted, and after the publisher ended the subscription), hands each
// event to the handler on the dispatch thread and acknowledges what it consumed so that the publisher may send
// more: every max(1, depth/4) records, after the last record of a batch of arrivals once kAckInterval has passed
// since the last acknowledgement, and within a second of going idle (the worker below), so that a subscriber holds
// nothing unacknowledged for long. Not after every batch: records of a sampled stream (16 KiB events, a few
// hundred a second) arrive one read at a time, and an acknowledgement each was as many frames back, each a
// wake-up of both sides' transport threads. Dispatch thread, except report() and last_refusal().
//
// The retries need a clock, and an application has none on its dispatch thread: the Subscriber starts one worker
// (from its first subscribe) that sleeps a second at a time and posts retry_now() to the dispatch thread when
// something is not accepted. One idle thread per subscribing application, never per subscription or publisher.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "daqx/api/application.hpp"
#include "daqx/mempool/ref.hpp"
#include "daqx/streams/policy.hpp"
#include "daqx/streams/protocol.hpp"

namespace daqx::streams {

struct StreamEvent {
  std::uint64_t subscription = 0;
  std::uint64_t sequence = 0;
  std::uint64_t key = 0;
  std::uint64_t dropped = 0;  // by the publisher's policy for this subscription, in all
  mem::Ref bytes;             // the event's bytes (shared with other subscribers in the same context: never change)
};

class Subscriber {
 public:
  using Handler = std::function<void(const StreamEvent&)>;
  // After a batch of arrivals, what was consumed is acknowledged if the last acknowledgement is this old.
  static constexpr std::chrono::milliseconds kAckInterval{50};
  Subscriber(ApplicationContext& context, Handler handler);
  ~Subscriber();
  Subscriber(const Subscriber&) = delete;
  Subscriber& operator=(const Subscriber&) = delete;

  // Subscribes to `stream` of `publisher` with `policy`; until the publisher accepts, again every second. A second
  // subscribe to the same stream of the same publisher replaces the first (the publisher does the same).
  void subscribe(Tid publisher, const std::string& stream, const Policy& policy);
  void unsubscribe_all();
  // Dispatch thread: sends the subscribes not accepted now again (what the worker posts every second; an
  // application may call it sooner, e.g. when it sees the publisher back).
  void retry_now();
  // Subscriptions the publishers accepted and did not end since.
  std::size_t accepted() const noexcept;
  void report(MetricSink& sink) const;
  // Any thread: why the last subscribe was refused ("" when none was), "<stream> of <tid>: <reason>".
  std::string last_refusal() const;

 private:
  struct Wanted {
    Tid publisher = kNoTid;
    std::string stream;
    Policy policy;
    std::uint64_t subscription = 0;  // 0: not accepted (yet)
    std::uint64_t transaction = 0;   // of the last subscribe sent
    std::uint64_t consumed = 0;      // last sequence handed to the handler
    std::uint64_t acknowledged = 0;
    std::chrono::steady_clock::time_point acknowledged_at{};
    std::uint64_t dropped = 0;       // the publisher's `dropped` in the last record
  };
  void on_reply(Frame&& frame);
  void on_data(Frame& frame);
  void acknowledge(Wanted& w, std::chrono::steady_clock::time_point now);
  void send_control(const Wanted& w, ControlKind kind, std::uint64_t transaction);

  ApplicationContext& context_;
  Handler handler_;
  std::vector<Wanted> wanted_;
  std::uint64_t next_transaction_ = 1;
  std::atomic<bool> retrying_{false};
  std::jthread ticker_;

  std::atomic<std::uint64_t> received_{0};
  std::atomic<std::uint64_t> dropped_{0};  // by the publishers' policies, from the records' `dropped`
  std::atomic<std::uint64_t> gaps_{0};     // records missing in a subscription's sequence (never, but checked)
  std::atomic<std::uint64_t> refusals_{0};
  std::atomic<std::uint64_t> ended_{0};
  std::atomic<std::uint64_t> malformed_{0};
  mutable std::mutex refusal_mutex_;
  std::string last_refusal_;
};

}  // namespace daqx::streams
