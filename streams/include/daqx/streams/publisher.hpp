// A publishing application's streams: named streams it offers, the subscriptions to them (applications over any
// transport, and the control port's clients through external_sink.hpp), each with the policy its subscriber
// declared, and the counters of each. The application owns one Publisher and calls it from its dispatch thread
// (handlers, tasks); report() and the StreamDirectory it registers are safe from any thread.
//
// A subscriber with any policy but `block` never slows the publisher or another subscriber: what it has not
// acknowledged is bounded by its depth, and beyond that its policy drops (counted), at the cost of a counter.
// Event bytes are shared, never copied: make() builds them once for every subscription that takes the event, and
// each record is a small block (frame header and record header) with the shared bytes linked after it.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "daqx/api/application.hpp"
#include "daqx/streams/external_sink.hpp"
#include "daqx/streams/policy.hpp"

namespace daqx::streams {

// How report() names a subscription's counters: "subscriber_" then what it counts (delivered, dropped, skipped,
// queued, lag), labelled by these three. The control port's summary and the dashboards group them by the labels.
inline constexpr std::string_view kSubscriptionMetricPrefix = "subscriber_";
inline constexpr std::string_view kStreamLabel = "stream";
inline constexpr std::string_view kSubscriberLabel = "subscriber";
inline constexpr std::string_view kPolicyLabel = "policy";

using StreamId = std::uint32_t;

struct PublisherOptions {
  std::uint32_t max_subscribers = 64;  // per stream: more are refused with the reason
  // A full subscription whose subscriber acknowledged nothing for this long is probed (a record of no event) at
  // most this often while events come for it: a probe that cannot be sent ends it, counted as lost (a subscriber
  // killed while its window was full sends nothing again, and is found this way).
  std::chrono::milliseconds probe_interval{1000};
  // Records for a subscription that samples (sample:N, rate:R) are sent together: once max(1, depth / 4) of them
  // wait, or the oldest has waited this long (checked when the subscription takes a record, and by send_held()).
  // A sampled subscriber then wakes once per batch, not once per record, and so does the publisher for its
  // acknowledgement: on a busy host that is what a sampled stream costs. 0: every record is sent at once. Every
  // other policy's records go at once: a `block` subscriber's hold the publisher back, and one that takes every
  // event it can keep up with would hold up to a quarter of its depth of events' memory.
  std::chrono::milliseconds batch_interval{0};
};

enum class Published {
  offered,     // every subscription had the event offered: taken, or dropped or skipped by its policy (or none)
  would_block  // a `block` subscription has `depth` records unacknowledged: nothing was done; offer the event
               // again after on_ready()
};

class Publisher {
 public:
  // Binds function::control on `context` and registers the StreamDirectory as directory_service_name(tid).
  explicit Publisher(ApplicationContext& context, PublisherOptions options = {});
  ~Publisher();  // withdraws the directory; external subscriptions then end
  Publisher(const Publisher&) = delete;
  Publisher& operator=(const Publisher&) = delete;

  // Configure: PublisherOptions::batch_interval from now on.
  void set_batch_interval(std::chrono::milliseconds interval);

  // Configure: a stream to offer (a stream name, check_stream_name; offered once). Throws std::invalid_argument.
  StreamId offer(const std::string& name);

  // Dispatch thread. Offers an event to the stream's subscriptions. make() (returning a mem::Ref of the event's
  // bytes, never changed afterwards; empty when it could not, e.g. its pool ran dry) is called at most once, and
  // only when a subscription takes the event; with no subscription the cost is one test. An empty Ref is a drop,
  // counted, for the subscriptions that took the event; with a `block` subscription publish() says would_block
  // instead, and nothing is done: offer the event again later (on_ready() is not called for it).
  template <typename Make>
  Published publish(StreamId stream, std::uint64_t key, Make&& make) {
    if (!count_offer(stream)) return Published::offered;
    return publish_to_subscriptions(stream, key, MakeRef(make));
  }

  // Dispatch thread: sends the records that have waited batch_interval (all == true: every record held back for
  // a batch, as at the end of a run). With a batch_interval, call it at least that often (the application's
  // ticker), so that the last records before a quiet time are not held until the next event.
  void send_held(bool all = false);

  // Dispatch thread: called when a `block` subscription that made publish() say would_block has room again.
  void on_ready(std::function<void()> callback);

  // Halt: every subscription is told `ended` with the reason and forgotten; new subscriptions are refused until
  // the next offer() of a stream. The streams stay declared.
  void halt(const std::string& reason = "the publisher halted");

  // From any thread: per subscription (labels stream, subscriber, policy) and the totals unlabelled.
  void report(MetricSink& sink) const;

  // Subscriptions now, over every stream (any thread).
  std::size_t subscriptions() const noexcept;

  struct Core;  // the state, shared with the directory and external subscriptions (which may outlive this)

 private:
  // A type-erased reference to the caller's make(), with no allocation.
  class MakeRef {
   public:
    template <typename Make>
    explicit MakeRef(Make& make) : object_(&make), call_([](void* m) { return (*static_cast<Make*>(m))(); }) {}
    mem::Ref operator()() const { return call_(object_); }

   private:
    void* object_;
    mem::Ref (*call_)(void*);
  };

  // Counts the event as offered to the stream; whether the stream has a subscription to offer it to.
  bool count_offer(StreamId stream) const noexcept;
  Published publish_to_subscriptions(StreamId stream, std::uint64_t key, MakeRef make);

  std::shared_ptr<Core> core_;
};

}  // namespace daqx::streams
