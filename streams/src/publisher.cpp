#include "daqx/streams/publisher.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <mutex>
#include <stdexcept>
#include <unordered_map>

#include "daqx/api/counter_set.hpp"
#include "daqx/api/named_services.hpp"
#include "daqx/services/text.hpp"
#include "daqx/streams/protocol.hpp"

namespace daqx::streams {
namespace {

using Clock = std::chrono::steady_clock;

// Streams one publisher offers at most: a fixed table, so that offer() never moves what publish() reads.
constexpr std::size_t kMaxStreams = 16;

struct SubscriptionCounters : CounterSet {
  Counter delivered{*this, "subscriber_delivered", "records sent to this subscriber"};
  Counter dropped{*this, "subscriber_dropped", "events this subscriber's policy dropped: it was behind by its depth"};
  Counter skipped{*this, "subscriber_skipped", "events this subscriber's sampling passed over"};
  Counter queued{*this, "subscriber_queued", "records waiting to be sent to this subscriber", Metric::Kind::gauge};
  Counter lag{*this, "subscriber_lag", "records sent to this subscriber and not acknowledged", Metric::Kind::gauge};
};

struct TotalCounters : CounterSet {
  Counter subscribers{*this, "stream_subscribers", "subscriptions to this application's streams now",
                      Metric::Kind::gauge};
  Counter sent{*this, "stream_records_sent", "records sent to subscribers, all streams"};
  Counter dropped{*this, "stream_events_dropped", "events dropped by subscribers' policies, all streams"};
  Counter lost{*this, "stream_subscribers_lost",
               "subscriptions ended because their subscriber went away (its connection failed, its client left)"};
  Counter refused{*this, "stream_subscriptions_refused",
                  "subscribe requests refused (unknown stream, bad policy, too many subscribers, not offering)"};
  Counter bad_messages{*this, "stream_control_refused", "stream control frames refused as malformed or not ours"};
};

struct Pending {
  std::uint64_t key = 0;
  mem::Ref bytes;
};

struct Subscription {
  std::uint64_t id = 0;
  StreamId stream = 0;
  Tid subscriber = kNoTid;  // kNoTid: an external sink
  Policy policy;
  std::string label;        // "tid 42", "external 7"
  std::string policy_text;  // to_string(policy)
  std::shared_ptr<ExternalSink> sink;

  // Records not yet sent, oldest first: a ring of policy.depth entries.
  std::vector<Pending> ring;
  std::size_t head = 0;
  std::size_t count = 0;

  std::uint64_t sent = 0;                // the last sequence sent
  std::atomic<std::uint64_t> acked{0};  // the last sequence acknowledged (by any thread for an external sink)
  std::uint64_t dropped = 0;             // for the records' `dropped` field
  std::uint64_t offered = 0;             // sample: events offered, for one in `every`
  double tokens = 0;                     // sample with a rate: events it may still take
  Clock::time_point refilled{};
  Clock::time_point heard{};   // subscribed, acknowledged or probed last
  Clock::time_point held_since{};  // when the oldest record held back for a batch was taken
  SubscriptionCounters counters;

  std::uint64_t unacknowledged() const noexcept { return sent - std::min(sent, acked.load(std::memory_order_acquire)); }
  std::uint64_t outstanding() const noexcept { return unacknowledged() + count; }
  Pending& at(std::size_t i) noexcept { return ring[(head + i) % ring.size()]; }
  void push(Pending pending) noexcept {
    at(count) = std::move(pending);
    ++count;
  }
  Pending pop() noexcept {
    Pending front = std::move(ring[head]);
    head = (head + 1) % ring.size();
    --count;
    return front;
  }
  void update_gauges() noexcept {
    counters.queued.set(count);
    counters.lag.set(unacknowledged());
  }
};

using SubscriptionPtr = std::shared_ptr<Subscription>;

struct Stream {
  std::string name;
  std::vector<SubscriptionPtr> subscriptions;
  std::atomic<std::size_t> subscribed{0};  // subscriptions.size(), read without the lock by publish()
};

struct PublishedCounter : CounterSet {
  Counter published{*this, "stream_published", "events offered to this stream"};
};

}  // namespace

struct Publisher::Core final : StreamDirectory, std::enable_shared_from_this<Publisher::Core> {
  Core(ApplicationContext& owner, PublisherOptions limits) : context(owner), options(limits) {}

  ApplicationContext& context;
  PublisherOptions options;  // batch_interval changes under the mutex (set_batch_interval)

  // Guards the subscriptions (their lists, queues and policy state), the streams' names and the callbacks. Held
  // on the publish path only when the stream has a subscription, and never while a callback runs.
  mutable std::mutex mutex;
  std::array<Stream, kMaxStreams> table;
  std::array<PublishedCounter, kMaxStreams> published;
  std::atomic<std::size_t> stream_count{0};
  std::unordered_map<std::uint64_t, SubscriptionPtr> by_id;
  std::uint64_t next_id = 1;
  bool accepting = false;  // offering: a stream offered and not ended since
  bool alive = true;       // false once the Publisher is gone: external subscriptions then do nothing
  bool blocked = false;    // publish() said would_block: tell on_ready when there is room
  std::function<void()> ready;
  TotalCounters totals;

  // ---- StreamDirectory (any thread) ----
  std::vector<StreamDescription> streams() const override {
    std::lock_guard lock(mutex);
    std::vector<StreamDescription> out;
    for (std::size_t i = 0; i < stream_count.load(); ++i)
      out.push_back({table[i].name, published[i].published.load(),
                     static_cast<std::uint32_t>(table[i].subscriptions.size())});
    return out;
  }
  Attached attach(const std::string& stream, const Policy& policy, std::shared_ptr<ExternalSink> sink) override;

  // ---- under the lock ----
  Stream* find_stream(std::string_view name, StreamId& id) {
    for (std::size_t i = 0; i < stream_count.load(std::memory_order_relaxed); ++i) {
      if (table[i].name == name) {
        id = static_cast<StreamId>(i);
        return &table[i];
      }
    }
    return nullptr;
  }
  std::string stream_names() const {
    std::string names;
    for (std::size_t i = 0; i < stream_count.load(std::memory_order_relaxed); ++i)
      names += (names.empty() ? "" : ", ") + table[i].name;
    return names.empty() ? "none" : names;
  }
  // Why a new subscription to `name` is refused, or "" (and the stream's id).
  std::string refusal(const std::string& name, StreamId& id) {
    if (!accepting) return "application " + std::to_string(context.tid()) + " offers no stream now (not configured)";
    if (!check_stream_name(name).empty()) return check_stream_name(name);
    Stream* stream = find_stream(name, id);
    if (stream == nullptr) return "no stream " + strings::quoted(name) + " here: it offers " + stream_names();
    if (stream->subscriptions.size() >= options.max_subscribers)
      return "stream " + strings::quoted(name) + " has " + std::to_string(stream->subscriptions.size()) +
             " subscribers, the most it takes (PublisherOptions::max_subscribers)";
    return {};
  }
  SubscriptionPtr add(StreamId id, Tid subscriber, const Policy& policy, std::shared_ptr<ExternalSink> sink) {
    auto s = std::make_shared<Subscription>();
    s->id = next_id++;
    s->stream = id;
    s->subscriber = subscriber;
    s->policy = policy;
    s->label = sink ? "external " + std::to_string(s->id) : "tid " + std::to_string(subscriber);
    s->policy_text = to_string(policy);
    s->sink = std::move(sink);
    s->ring.resize(policy.depth);
    s->tokens = 1;
    s->refilled = s->heard = Clock::now();
    Stream& stream = table[id];
    stream.subscriptions.push_back(s);
    stream.subscribed.store(stream.subscriptions.size(), std::memory_order_release);
    by_id.emplace(s->id, s);
    totals.subscribers.add();
    return s;
  }
  // Forgets s; its records not sent go back to their pools. `lost`: its subscriber went away.
  void remove(const SubscriptionPtr& s, bool lost) {
    Stream& stream = table[s->stream];
    auto& list = stream.subscriptions;
    list.erase(std::remove(list.begin(), list.end(), s), list.end());
    stream.subscribed.store(list.size(), std::memory_order_release);
    by_id.erase(s->id);
    while (s->count > 0) s->pop();
    totals.subscribers.sub();
    if (lost) totals.lost.add();
  }

  void reply(Tid to, std::uint64_t transaction, ReplyKind kind, std::uint64_t subscription, const std::string& reason) {
    const ReplyMessage message{kind, subscription, reason};
    mem::Ref frame = context.allocate_frame(reply_bytes(message));
    if (!frame) return;  // the pool is dry: a subscriber asks again
    encode(message, frame.data() + kFrameHeaderSize);
    // At once in any endpoint mode, as the Subscriber's control messages.
    constexpr auto flags = static_cast<std::uint8_t>(frame_flags::reply | frame_flags::send_now);
    context.send(to, function::reply, transaction, frame, flags);
  }

  // Sends what s's depth allows. False when s ended (its subscriber is gone): the caller removes it.
  bool flush(Subscription& s) {
    bool alive_subscriber = true;
    while (s.count > 0 && s.unacknowledged() < s.policy.depth) {
      Pending& next = s.at(0);
      const DataHeader header{s.id, s.sent + 1, next.key, s.dropped};
      if (s.sink) {
        s.sink->push(StreamRecord{header.sequence, header.key, header.dropped, std::move(next.bytes)});
      } else {
        mem::Ref frame = context.allocate_frame(kDataHeaderBytes);
        if (!frame) break;  // the pool is dry: the next publish or acknowledgement tries again
        frame.resize(kFrameHeaderSize + kDataHeaderBytes);
        encode(header, frame.data() + kFrameHeaderSize);
        frame.append(std::move(next.bytes));
        const SendStatus status = context.send(s.subscriber, function::data, s.id, frame);
        if (status == SendStatus::would_block) {
          next.bytes = frame.detach_next();  // the event's bytes stay queued; the header block goes back
          break;
        }
        if (status != SendStatus::ok) {  // its connection failed, or it is not reachable any more
          alive_subscriber = false;
          break;
        }
      }
      s.pop();
      ++s.sent;
      s.counters.delivered.add_single_writer();
      totals.sent.add();
    }
    s.update_gauges();
    return alive_subscriber;
  }

  // Whether s's queued records go now (PublisherOptions::batch_interval): a sampling subscription's once a batch
  // waits or the oldest has waited the interval, any other's at once. `now` is read here only if `clock` (or
  // already read): the publish path reads it for the subscription that took the event, not for every one.
  bool due(const Subscription& s, Clock::time_point& now, bool clock) const {
    if (s.count == 0) return false;
    if (s.policy.kind != PolicyKind::sample || options.batch_interval.count() == 0) return true;
    if (s.count >= std::max<std::uint32_t>(1, s.policy.depth / 4)) return true;
    if (now == Clock::time_point{}) {
      if (!clock) return false;
      now = Clock::now();
    }
    return now - s.held_since >= options.batch_interval;
  }
  // flush(s) if its records are due; false when s ended (as flush). Its gauges are brought up to date either way.
  bool send_due(Subscription& s, Clock::time_point& now, bool clock = true) {
    if (due(s, now, clock)) return flush(s);
    s.update_gauges();
    return true;
  }

  // A full subscription not heard from for probe_interval gets a record of no event: false when it cannot be sent
  // (the subscriber is gone).
  bool probe(Subscription& s, Clock::time_point& now) {
    if (s.sink || s.outstanding() < s.policy.depth) return true;
    if (now == Clock::time_point{}) now = Clock::now();
    if (now - s.heard < options.probe_interval) return true;
    s.heard = now;
    mem::Ref frame = context.allocate_frame(kDataHeaderBytes);
    if (!frame) return true;
    encode(DataHeader{s.id, 0, 0, s.dropped}, frame.data() + kFrameHeaderSize);
    const SendStatus status = context.send(s.subscriber, function::data, s.id, frame);
    return status == SendStatus::ok || status == SendStatus::would_block;
  }

  void drop(Subscription& s) {
    ++s.dropped;
    s.counters.dropped.add_single_writer();
    totals.dropped.add();
  }

  // s takes the event by its policy, or drops or skips it (counted). The bytes are made when first needed; false
  // when they could not be (counted as a drop).
  bool take(Subscription& s, std::uint64_t key, mem::Ref& bytes, bool& made, const MakeRef& make, Clock::time_point& now);

  // Dispatch thread: an external subscription's acknowledgement (flush what it allows) or cancellation.
  void settle(std::uint64_t id, bool cancel);
  // Under the lock: the on_ready callback to call (after the lock) if publish() blocked and every `block`
  // subscription has room now.
  std::function<void()> ready_if_room();
  // Dispatch thread: a frame of function::control.
  void on_control(Frame&& frame);
};

bool Publisher::Core::take(Subscription& s, std::uint64_t key, mem::Ref& bytes, bool& made, const MakeRef& make,
                           Clock::time_point& now) {
  const Policy& p = s.policy;
  if (p.kind == PolicyKind::sample) {
    if (++s.offered % p.every != 0) {
      s.counters.skipped.add_single_writer();
      return true;
    }
    if (p.max_rate != 0) {
      if (now == Clock::time_point{}) now = Clock::now();
      const double seconds = std::chrono::duration<double>(now - s.refilled).count();
      s.refilled = now;
      // At most one second's worth held, and at least one event: a burst after a quiet time is one second long.
      s.tokens = std::min(std::max(1.0, p.max_rate), s.tokens + seconds * p.max_rate);
      if (s.tokens < 1) {
        s.counters.skipped.add_single_writer();
        return true;
      }
      s.tokens -= 1;
    }
  }
  // The event's bytes, made by the first subscription that takes it; false (a drop, counted) when they cannot be.
  auto have_bytes = [&] {
    if (!made) {
      bytes = make();
      made = true;
    }
    if (!bytes) drop(s);
    return static_cast<bool>(bytes);
  };
  if (p.kind == PolicyKind::keep_last) {  // a newer event of the key replaces one not yet sent (depth bounds the scan)
    for (std::size_t i = 0; i < s.count; ++i) {
      if (s.at(i).key != key) continue;
      if (!have_bytes()) return false;
      s.at(i).bytes = bytes.share();
      drop(s);
      return true;
    }
  }
  if (s.outstanding() >= p.depth) {
    // Full: block never gets here (publish checked), the others drop by their rule.
    if ((p.kind == PolicyKind::drop_oldest || p.kind == PolicyKind::keep_last) && s.count > 0) {
      s.pop();
      drop(s);
    } else {
      drop(s);
      return true;
    }
  }
  if (!have_bytes()) return false;
  if (s.count == 0 && p.kind == PolicyKind::sample && options.batch_interval.count() != 0) {
    if (now == Clock::time_point{}) now = Clock::now();
    s.held_since = now;
  }
  s.push(Pending{key, bytes.share()});
  return true;
}

StreamDirectory::Attached Publisher::Core::attach(const std::string& stream, const Policy& policy,
                                                  std::shared_ptr<ExternalSink> sink) {
  class Handle final : public ExternalSubscription {
   public:
    Handle(std::weak_ptr<Core> core, std::uint64_t id) : core_(std::move(core)), id_(id) {}
    ~Handle() override { cancel(); }
    void acknowledge(std::uint64_t sequence) noexcept override { post(sequence, false); }
    void cancel() noexcept override {
      if (!cancelled_.exchange(true)) post(0, true);
    }

   private:
    // Done on the publisher's dispatch thread, so that an acknowledgement never takes the publisher's lock on the
    // control port's thread while its sink's lock is held.
    void post(std::uint64_t sequence, bool cancel) noexcept {
      const std::shared_ptr<Core> core = core_.lock();
      if (!core) return;
      std::lock_guard lock(core->mutex);
      if (!core->alive) return;  // the context may be gone with the Publisher
      auto it = core->by_id.find(id_);
      if (it == core->by_id.end()) return;
      Subscription& s = *it->second;
      if (!cancel) {
        std::uint64_t seen = s.acked.load(std::memory_order_relaxed);
        while (sequence > seen && !s.acked.compare_exchange_weak(seen, sequence, std::memory_order_acq_rel)) {}
      }
      try {
        core->context.post_task([weak = core_, id = id_, cancel] {
          const std::shared_ptr<Core> c = weak.lock();
          if (c) c->settle(id, cancel);
        });
      } catch (...) {  // no memory for the task: the next acknowledgement or publish settles it
      }
    }
    std::weak_ptr<Core> core_;
    std::uint64_t id_;
    std::atomic<bool> cancelled_{false};
  };

  Attached attached;
  if (std::string why = check_policy(policy); !why.empty()) {
    totals.refused.add();
    attached.error = "policy: " + why;
    attached.refusal = Refusal::bad_policy;
    return attached;
  }
  std::lock_guard lock(mutex);
  StreamId id = 0;
  if (!alive) {
    attached.error = "the publisher is gone";
    attached.refusal = Refusal::not_offering;
  } else if (std::string why = refusal(stream, id); !why.empty()) {
    attached.error = std::move(why);
    Stream* found = accepting ? find_stream(stream, id) : nullptr;
    attached.refusal = !accepting ? Refusal::not_offering : found == nullptr ? Refusal::unknown_stream : Refusal::full;
  } else {
    const SubscriptionPtr s = add(id, kNoTid, policy, std::move(sink));
    attached.subscription = std::make_shared<Handle>(weak_from_this(), s->id);
    return attached;
  }
  totals.refused.add();
  return attached;
}

void Publisher::Core::settle(std::uint64_t id, bool cancel) {
  std::function<void()> callback;
  {
    std::lock_guard lock(mutex);
    auto it = by_id.find(id);
    if (it == by_id.end()) return;
    const SubscriptionPtr s = it->second;
    Clock::time_point now{};
    if (cancel) {
      remove(s, true);
    } else if (!send_due(*s, now)) {
      remove(s, true);
    }
    callback = ready_if_room();
  }
  if (callback) callback();
}

std::function<void()> Publisher::Core::ready_if_room() {
  if (!blocked) return {};
  for (std::size_t i = 0; i < stream_count.load(std::memory_order_relaxed); ++i)
    for (const SubscriptionPtr& s : table[i].subscriptions)
      if (s->policy.kind == PolicyKind::block && s->outstanding() >= s->policy.depth) return {};
  blocked = false;
  return ready;
}

void Publisher::Core::on_control(Frame&& frame) {
  const Tid from = frame.header.initiator;
  const std::uint64_t transaction = frame.header.transaction;
  std::vector<std::byte> copy;  // the message is small; a chain (it never is one from a Subscriber) is joined
  std::span<const std::byte> payload;
  if (frame.data.chain_length() == 1) {
    payload = frame.data.bytes().subspan(kFrameHeaderSize);
  } else {
    for (const mem::Block* b = frame.data.head(); b != nullptr; b = b->next())
      copy.insert(copy.end(), b->data(), b->data() + b->size());
    payload = std::span<const std::byte>(copy).subspan(kFrameHeaderSize);
  }
  Parsed<ControlMessage> parsed = parse_control(payload);
  const bool subscribe_kind =
      !payload.empty() && static_cast<std::uint8_t>(payload[0]) == static_cast<std::uint8_t>(ControlKind::subscribe);
  frame.data.reset();  // payload is gone with it
  if (!parsed.message) {
    totals.bad_messages.add();
    // A subscribe that is malformed is answered, so that its sender learns why.
    if (subscribe_kind) {
      totals.refused.add();
      reply(from, transaction, ReplyKind::refused, 0, parsed.error);
    }
    return;
  }
  ControlMessage& message = *parsed.message;
  std::function<void()> callback;
  {
    std::unique_lock lock(mutex);
    if (message.kind == ControlKind::subscribe) {
      StreamId id = 0;
      // A second subscribe of one subscriber to one stream replaces the first (it restarted, or changes policy).
      if (Stream* stream = find_stream(message.stream, id); stream != nullptr) {
        const auto& list = stream->subscriptions;
        auto same = std::find_if(list.begin(), list.end(), [&](const SubscriptionPtr& s) { return s->subscriber == from; });
        if (same != list.end()) remove(SubscriptionPtr(*same), false);
      }
      std::string why = refusal(message.stream, id);
      if (!why.empty()) {
        totals.refused.add();
        lock.unlock();
        reply(from, transaction, ReplyKind::refused, 0, why);
        return;
      }
      const SubscriptionPtr s = add(id, from, message.policy, nullptr);
      const std::uint64_t subscription = s->id;
      lock.unlock();
      reply(from, transaction, ReplyKind::accepted, subscription, {});
      return;
    }
    auto it = by_id.find(message.subscription);
    if (it == by_id.end() || it->second->subscriber != from) {
      totals.bad_messages.add();
      lock.unlock();
      // Its subscription is gone (ended, or the publisher restarted): say so, and it subscribes again.
      reply(from, transaction, ReplyKind::ended, message.subscription, "no such subscription here");
      return;
    }
    const SubscriptionPtr s = it->second;
    if (message.kind == ControlKind::unsubscribe) {
      remove(s, false);
    } else {
      // Never past what was sent: a subscriber cannot make room it has not used.
      const std::uint64_t sequence = std::min(message.sequence, s->sent);
      if (sequence > s->acked.load(std::memory_order_relaxed)) s->acked.store(sequence, std::memory_order_release);
      s->heard = Clock::now();
      Clock::time_point now = s->heard;
      if (!send_due(*s, now)) remove(s, true);
    }
    callback = ready_if_room();
  }
  if (callback) callback();
}

// ---- Publisher ----

Publisher::Publisher(ApplicationContext& context, PublisherOptions options)
    : core_(std::make_shared<Core>(context, options)) {
  context.bind(function::control, [core = core_.get()](Frame&& frame) { core->on_control(std::move(frame)); });
  publish_service(directory_service_name(context.tid()), std::static_pointer_cast<StreamDirectory>(core_));
}

Publisher::~Publisher() {
  withdraw_service(directory_service_name(core_->context.tid()), static_cast<StreamDirectory*>(core_.get()));
  std::vector<std::shared_ptr<ExternalSink>> sinks;
  {
    std::lock_guard lock(core_->mutex);
    core_->alive = false;
    core_->accepting = false;
    for (auto& [id, s] : core_->by_id)
      if (s->sink) sinks.push_back(s->sink);
    for (std::size_t i = 0; i < core_->stream_count.load(); ++i) {
      core_->table[i].subscriptions.clear();
      core_->table[i].subscribed.store(0);
    }
    core_->by_id.clear();
  }
  for (const auto& sink : sinks) sink->close("the publishing application is gone");
}

void Publisher::set_batch_interval(std::chrono::milliseconds interval) {
  std::lock_guard lock(core_->mutex);
  core_->options.batch_interval = interval;
}

StreamId Publisher::offer(const std::string& name) {
  if (std::string why = check_stream_name(name); !why.empty()) throw std::invalid_argument(why);
  std::lock_guard lock(core_->mutex);
  StreamId id = 0;
  if (core_->find_stream(name, id) == nullptr) {
    const std::size_t count = core_->stream_count.load();
    if (count == kMaxStreams)
      throw std::invalid_argument("stream " + strings::quoted(name) + ": an application offers at most " +
                                  std::to_string(kMaxStreams) + " streams");
    core_->table[count].name = name;
    core_->stream_count.store(count + 1, std::memory_order_release);
    id = static_cast<StreamId>(count);
  }
  core_->accepting = true;
  return id;
}

bool Publisher::count_offer(StreamId stream) const noexcept {
  core_->published[stream].published.add_single_writer();
  return core_->table[stream].subscribed.load(std::memory_order_acquire) != 0;
}

Published Publisher::publish_to_subscriptions(StreamId stream, std::uint64_t key, MakeRef make) {
  std::vector<SubscriptionPtr> gone;
  {
    std::lock_guard lock(core_->mutex);
    auto& list = core_->table[stream].subscriptions;
    // Back-pressure first, before anything is done: the event comes again whole.
    bool has_block = false;
    for (const SubscriptionPtr& s : list) {
      if (s->policy.kind == PolicyKind::block) has_block = true;
      if (s->policy.kind != PolicyKind::block || s->outstanding() < s->policy.depth) continue;
      if (!core_->flush(*s)) {
        gone.push_back(s);
        continue;
      }
      if (s->outstanding() >= s->policy.depth) {
        for (const SubscriptionPtr& g : gone) core_->remove(g, true);
        core_->blocked = true;
        core_->published[stream].published.sub();  // offered again later: counted then
        return Published::would_block;
      }
    }
    mem::Ref bytes;
    bool made = false;
    if (has_block) {
      // A block subscription takes every event: when its bytes cannot be made now (a pool ran dry) the event is
      // not dropped for it but offered again, as when it is full (the caller retries later).
      bytes = make();
      made = true;
      if (!bytes) {
        for (const SubscriptionPtr& g : gone) core_->remove(g, true);
        core_->published[stream].published.sub();
        return Published::would_block;
      }
    }
    Clock::time_point now{};
    for (const SubscriptionPtr& s : list) {
      if (std::find(gone.begin(), gone.end(), s) != gone.end()) continue;
      const std::size_t queued = s->count;
      core_->take(*s, key, bytes, made, make, now);
      // What is due goes (records left by a full connection included); only a subscription that took this event
      // reads the clock for its batch's age: records held while none comes are send_held()'s.
      if (!core_->send_due(*s, now, s->count != queued) || !core_->probe(*s, now)) gone.push_back(s);
    }
    for (const SubscriptionPtr& g : gone) core_->remove(g, true);
  }
  return Published::offered;
}

void Publisher::send_held(bool all) {
  std::vector<SubscriptionPtr> gone;
  std::lock_guard lock(core_->mutex);
  Clock::time_point now = Clock::now();
  for (std::size_t i = 0; i < core_->stream_count.load(std::memory_order_relaxed); ++i) {
    for (const SubscriptionPtr& s : core_->table[i].subscriptions) {
      const bool alive = all ? s->count == 0 || core_->flush(*s) : core_->send_due(*s, now);
      if (!alive) gone.push_back(s);
    }
  }
  for (const SubscriptionPtr& g : gone) core_->remove(g, true);
}

void Publisher::on_ready(std::function<void()> callback) {
  std::lock_guard lock(core_->mutex);
  core_->ready = std::move(callback);
}

void Publisher::halt(const std::string& reason) {
  std::vector<SubscriptionPtr> ended;
  {
    std::lock_guard lock(core_->mutex);
    core_->accepting = false;
    core_->blocked = false;
    for (auto& [id, s] : core_->by_id) ended.push_back(s);
    for (const SubscriptionPtr& s : ended) core_->remove(s, false);
  }
  for (const SubscriptionPtr& s : ended) {
    if (s->sink) s->sink->close(reason);
    else core_->reply(s->subscriber, 0, ReplyKind::ended, s->id, reason);
  }
}

std::size_t Publisher::subscriptions() const noexcept { return core_->totals.subscribers.load(); }

void Publisher::report(MetricSink& sink) const {
  std::lock_guard lock(core_->mutex);
  for (std::size_t i = 0; i < core_->stream_count.load(); ++i) {
    const Stream& stream = core_->table[i];
    core_->published[i].report(sink, {{std::string(kStreamLabel), stream.name}});
    for (const SubscriptionPtr& s : stream.subscriptions)
      s->counters.report(sink, {{std::string(kStreamLabel), stream.name},
                                {std::string(kSubscriberLabel), s->label},
                                {std::string(kPolicyLabel), s->policy_text}});
  }
  core_->totals.report(sink);
}

}  // namespace daqx::streams
