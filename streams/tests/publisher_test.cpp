// A publisher and its subscribers through their real frames on a bus of test contexts: every policy, the depth
// bound, back-pressure, subscribers that go away, refusals, external sinks, and every block back to its pool.
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <thread>
#include <vector>

#include "daqx/api/named_services.hpp"
#include "daqx/streams/external_sink.hpp"
#include "daqx/streams/protocol.hpp"
#include "daqx/streams/publisher.hpp"
#include "daqx/streams/subscriber.hpp"
#include "loop_context.hpp"

using namespace daqx;
using namespace daqx::streams;
using daqx::streams::test::Bus;
using daqx::streams::test::LoopContext;

namespace {

constexpr Tid kPublisher = 10;

// A subscriber written by hand: it sends the control frames the test asks for and keeps what comes back.
struct RawSubscriber {
  RawSubscriber(Bus& bus, Tid tid) : context(bus, tid, "raw") {
    context.bind(function::reply, [this](Frame&& frame) {
      auto parsed = parse_reply({frame.payload(), frame.payload_size_in_head()});
      REQUIRE(parsed.message);
      replies.push_back(*parsed.message);
    });
    context.bind(function::data, [this](Frame&& frame) {
      auto parsed = parse_data({frame.payload(), frame.payload_size_in_head()});
      REQUIRE(parsed.message);
      if (parsed.message->sequence == 0) {
        ++probes;
        return;
      }
      records.push_back(*parsed.message);
      // The event's bytes follow the two headers: the test's events are 8-byte keys.
      std::uint64_t key = 0;
      const std::size_t at = kFrameHeaderSize + kDataHeaderBytes;
      REQUIRE(frame.data.total_size() == at + sizeof key);
      const mem::Block* block = frame.data.head();
      std::size_t skip = at;
      while (skip >= block->size()) {
        skip -= block->size();
        block = block->next();
      }
      std::memcpy(&key, block->data() + skip, sizeof key);
      CHECK(key == parsed.message->key);
    });
  }
  void control(ControlKind kind, const std::string& policy_text = "", const std::string& stream = "events",
               std::uint64_t sequence = 0) {
    ControlMessage m;
    m.kind = kind;
    if (kind == ControlKind::subscribe) {
      m.policy = *parse_policy(policy_text).policy;
      m.stream = stream;
    }
    m.subscription = subscription();
    m.sequence = sequence;
    mem::Ref frame = context.allocate_frame(control_bytes(m));
    encode(m, frame.data() + kFrameHeaderSize);
    REQUIRE(context.send(kPublisher, function::control, 1, frame, 0) == SendStatus::ok);
  }
  std::uint64_t subscription() const {
    for (auto it = replies.rbegin(); it != replies.rend(); ++it)
      if (it->kind == ReplyKind::accepted) return it->subscription;
    return 0;
  }
  std::vector<std::uint64_t> keys() const {
    std::vector<std::uint64_t> out;
    for (const auto& r : records) out.push_back(r.key);
    return out;
  }
  LoopContext context;
  std::vector<ReplyMessage> replies;
  std::vector<DataHeader> records;
  std::size_t probes = 0;
};

struct Setup {
  explicit Setup(PublisherOptions options = {3, std::chrono::milliseconds(0)}) : publisher(context, options) {}
  Bus bus;
  LoopContext context{bus, kPublisher, "publisher"};
  Publisher publisher;
  StreamId events = publisher.offer("events");
  std::size_t made = 0;

  Published publish(std::uint64_t key) {
    return publisher.publish(events, key, [&] {
      ++made;
      mem::Ref bytes = context.pool().allocate(sizeof key);
      std::memcpy(bytes.data(), &key, sizeof key);
      return bytes;
    });
  }
  double metric(const std::string& name, const std::string& subscriber = {}) {
    MetricSink sink;
    publisher.report(sink);
    for (const Metric& m : sink.metrics()) {
      if (m.name != name) continue;
      if (subscriber.empty() && m.labels.empty()) return m.value;
      for (const auto& [label, value] : m.labels)
        if (label == "subscriber" && value == subscriber) return m.value;
    }
    return -1;
  }
};

std::vector<std::uint64_t> range(std::uint64_t from, std::uint64_t to) {
  std::vector<std::uint64_t> out;
  for (std::uint64_t i = from; i <= to; ++i) out.push_back(i);
  return out;
}

}  // namespace

TEST_CASE("with no subscriber an event is never made", "[streams]") {
  Setup s;
  for (std::uint64_t i = 1; i <= 100; ++i) CHECK(s.publish(i) == Published::offered);
  CHECK(s.made == 0);
  CHECK(s.metric("stream_subscribers") == 0);
}

TEST_CASE("drop-newest: at most depth records unacknowledged, the rest dropped and counted in the next record",
          "[streams]") {
  Setup s;
  RawSubscriber sub(s.bus, 20);
  sub.control(ControlKind::subscribe, "drop-newest,depth:4");
  s.bus.pump();
  REQUIRE(sub.subscription() != 0);
  for (std::uint64_t i = 1; i <= 10; ++i) s.publish(i);
  s.bus.pump();
  CHECK(sub.keys() == range(1, 4));
  CHECK(s.metric("subscriber_dropped", "tid 20") == 6);
  CHECK(s.metric("subscriber_lag", "tid 20") == 4);
  sub.control(ControlKind::acknowledge, "", "", 4);
  s.bus.pump();
  s.publish(11);
  s.bus.pump();
  REQUIRE(sub.records.size() == 5);
  CHECK(sub.records.back().sequence == 5);  // no gap in sequences: drops are counted instead
  CHECK(sub.records.back().dropped == 6);
  CHECK(sub.records.back().key == 11);
  CHECK(s.made == 5);  // made only for events a subscription took
}

TEST_CASE("drop-oldest and keep-last keep the newest records while the subscriber's connection is full",
          "[streams]") {
  Setup s;
  RawSubscriber oldest(s.bus, 20);
  RawSubscriber last(s.bus, 21);
  oldest.control(ControlKind::subscribe, "drop-oldest,depth:3");
  last.control(ControlKind::subscribe, "keep-last,depth:3");
  s.bus.pump();
  s.bus.room(20, 0);
  s.bus.room(21, 0);
  for (std::uint64_t key : {1, 2, 1, 3, 2, 4}) s.publish(key);
  s.bus.unlimited_room(20);
  s.bus.unlimited_room(21);
  s.publish(5);  // sends what the room allows now
  s.bus.pump();
  CHECK(oldest.keys() == std::vector<std::uint64_t>{2, 4, 5});
  // keep-last: a newer event of a key replaced the queued one in its place (1, 2, 3), then 4 and 5 pushed out the
  // oldest (1, then 2)
  CHECK(last.keys() == std::vector<std::uint64_t>{3, 4, 5});
  CHECK(s.metric("subscriber_dropped", "tid 21") == 4);
  CHECK(s.metric("subscriber_dropped", "tid 20") == 4);
}

TEST_CASE("sample takes one in N, every record arrives in order", "[streams]") {
  Setup s;
  RawSubscriber sub(s.bus, 20);
  sub.control(ControlKind::subscribe, "sample:10,depth:1000");
  s.bus.pump();
  for (std::uint64_t i = 1; i <= 100; ++i) s.publish(i);
  s.bus.pump();
  std::vector<std::uint64_t> expected;
  for (std::uint64_t i = 10; i <= 100; i += 10) expected.push_back(i);
  CHECK(sub.keys() == expected);
  CHECK(s.metric("subscriber_skipped", "tid 20") == 90);
  CHECK(s.metric("subscriber_dropped", "tid 20") == 0);
}

TEST_CASE("a rate-limited sample takes at most about its rate, and never more than the burst of one second",
          "[streams]") {
  Setup s;
  RawSubscriber sub(s.bus, 20);
  sub.control(ControlKind::subscribe, "rate:2,depth:1000");
  s.bus.pump();
  for (std::uint64_t i = 1; i <= 1000; ++i) s.publish(i);
  s.bus.pump();
  // However slow the machine, 1000 publishes in a row fill at most the initial token and what the elapsed time
  // earned: far fewer than 1000.
  CHECK(sub.records.size() >= 1);
  CHECK(sub.records.size() < 1000);
}

TEST_CASE("with a batch interval a sampled subscription's records go a quarter of its depth at a time, or once "
          "they waited the interval, any other policy's at once",
          "[streams]") {
  using std::chrono::milliseconds;
  SECTION("a batch goes when it is full, what is left when send_held(true) says") {
    Setup s({3, milliseconds(0), std::chrono::hours(1)});
    RawSubscriber sub(s.bus, 20);
    sub.control(ControlKind::subscribe, "sample:1,depth:16");  // batches of 4
    s.bus.pump();
    for (std::uint64_t i = 1; i <= 3; ++i) s.publish(i);
    s.bus.pump();
    CHECK(sub.records.empty());
    CHECK(s.metric("subscriber_queued", "tid 20") == 3);
    s.publish(4);
    s.bus.pump();
    CHECK(sub.keys() == range(1, 4));
    // An acknowledgement sends nothing that is not due either.
    s.publish(5);
    sub.control(ControlKind::acknowledge, "", "", 4);
    s.bus.pump();
    s.publisher.send_held();  // the hour has not passed
    s.bus.pump();
    CHECK(sub.keys() == range(1, 4));
    s.publisher.send_held(true);
    s.bus.pump();
    CHECK(sub.keys() == range(1, 5));
    CHECK(sub.records.back().sequence == 5);
    CHECK(s.metric("subscriber_queued", "tid 20") == 0);
    CHECK(s.metric("subscriber_dropped", "tid 20") == 0);
  }
  SECTION("a record that waited the interval goes at the next send_held()") {
    Setup s({3, milliseconds(0), milliseconds(1)});
    RawSubscriber sub(s.bus, 20);
    sub.control(ControlKind::subscribe, "sample:2");
    s.bus.pump();
    s.publish(1);
    s.publish(2);
    s.bus.pump();
    const auto held = std::chrono::steady_clock::now();
    while (std::chrono::steady_clock::now() - held < milliseconds(2)) std::this_thread::sleep_for(milliseconds(1));
    CHECK(sub.records.empty());
    s.publisher.send_held();
    s.bus.pump();
    CHECK(sub.keys() == std::vector<std::uint64_t>{2});
  }
  SECTION("a block, drop-newest, drop-oldest or keep-last subscription is never held back") {
    for (const char* policy : {"block,depth:16", "drop-newest,depth:16", "drop-oldest,depth:16", "keep-last,depth:16"}) {
      INFO(policy);
      Setup s({3, milliseconds(0), std::chrono::hours(1)});
      RawSubscriber sub(s.bus, 20);
      sub.control(ControlKind::subscribe, policy);
      s.bus.pump();
      s.publish(1);
      s.bus.pump();
      CHECK(sub.keys() == std::vector<std::uint64_t>{1});
    }
  }
}

TEST_CASE("block: the publisher is held back at depth and told when the subscriber made room", "[streams]") {
  Setup s;
  RawSubscriber sub(s.bus, 20);
  RawSubscriber sampler(s.bus, 21);
  sub.control(ControlKind::subscribe, "block,depth:2");
  sampler.control(ControlKind::subscribe, "drop-newest,depth:1");
  s.bus.pump();
  int ready = 0;
  s.publisher.on_ready([&] { ++ready; });
  CHECK(s.publish(1) == Published::offered);
  CHECK(s.publish(2) == Published::offered);
  CHECK(s.publish(3) == Published::would_block);
  CHECK(s.publish(3) == Published::would_block);
  s.bus.pump();
  CHECK(ready == 0);
  sub.control(ControlKind::acknowledge, "", "", 1);
  s.bus.pump();
  CHECK(ready == 1);
  CHECK(s.publish(3) == Published::offered);
  s.bus.pump();
  CHECK(sub.keys() == range(1, 3));  // nothing lost, nothing twice
  CHECK(sampler.keys() == std::vector<std::uint64_t>{1});
}

TEST_CASE("a subscriber whose sends fail is forgotten and counted lost, one that is full is probed", "[streams]") {
  Setup s;
  RawSubscriber gone(s.bus, 20);
  RawSubscriber stalled(s.bus, 21);
  gone.control(ControlKind::subscribe, "drop-newest,depth:2");
  stalled.control(ControlKind::subscribe, "drop-newest,depth:2");
  s.bus.pump();
  s.publish(1);
  s.publish(2);
  s.publish(3);  // both full now: probed (the test's probe interval is 0)
  s.bus.pump();
  CHECK(stalled.probes >= 1);
  s.bus.lose(20);
  s.publish(4);  // full: only the probe finds that 20 is gone
  s.bus.pump();
  CHECK(s.metric("stream_subscribers_lost") == 1);
  CHECK(s.metric("stream_subscribers") == 1);
  CHECK(s.metric("subscriber_dropped", "tid 21") == 2);
}

TEST_CASE("subscribe requests that cannot be served are refused with the reason, and stray control frames counted",
          "[streams]") {
  Setup s;  // at most 3 subscribers per stream
  RawSubscriber a(s.bus, 20);
  a.control(ControlKind::subscribe, "block", "nosuch");
  s.bus.pump();
  REQUIRE(a.replies.size() == 1);
  CHECK(a.replies[0].kind == ReplyKind::refused);
  CHECK(a.replies[0].reason.find("no stream 'nosuch' here: it offers events") != std::string::npos);

  std::vector<std::unique_ptr<RawSubscriber>> many;
  for (Tid t = 30; t < 34; ++t) {
    many.push_back(std::make_unique<RawSubscriber>(s.bus, t));
    many.back()->control(ControlKind::subscribe, "sample:100");
  }
  s.bus.pump();
  CHECK(many[3]->replies.at(0).kind == ReplyKind::refused);
  CHECK(many[3]->replies.at(0).reason.find("the most it takes") != std::string::npos);
  CHECK(s.metric("stream_subscribers") == 3);

  // A second subscribe of one subscriber replaces its first, it never counts twice.
  many[0]->control(ControlKind::subscribe, "drop-oldest");
  s.bus.pump();
  CHECK(s.metric("stream_subscribers") == 3);

  // Acknowledging or cancelling another's subscription: answered "ended", changes nothing.
  RawSubscriber thief(s.bus, 40);
  thief.replies.push_back({ReplyKind::accepted, many[1]->subscription(), {}});
  thief.control(ControlKind::unsubscribe);
  s.bus.pump();
  CHECK(thief.replies.back().kind == ReplyKind::ended);
  CHECK(s.metric("stream_subscribers") == 3);
  CHECK(s.metric("stream_control_refused") == 1);

  // Malformed: a subscribe with depth 0 is refused with the reason.
  ControlMessage bad;
  bad.policy.depth = 0;
  bad.stream = "events";
  mem::Ref frame = a.context.allocate_frame(control_bytes(bad));
  encode(bad, frame.data() + kFrameHeaderSize);
  a.context.send(kPublisher, function::control, 2, frame, 0);
  s.bus.pump();
  CHECK(a.replies.back().kind == ReplyKind::refused);
  CHECK(a.replies.back().reason.find("depth") != std::string::npos);
  CHECK(s.metric("stream_control_refused") == 2);
}

TEST_CASE("halt ends every subscription with the reason and refuses new ones until a stream is offered again",
          "[streams]") {
  Setup s;
  RawSubscriber sub(s.bus, 20);
  sub.control(ControlKind::subscribe, "block");
  s.bus.pump();
  s.publisher.halt("run over");
  s.bus.pump();
  CHECK(sub.replies.back().kind == ReplyKind::ended);
  CHECK(sub.replies.back().reason == "run over");
  sub.control(ControlKind::subscribe, "block");
  s.bus.pump();
  CHECK(sub.replies.back().kind == ReplyKind::refused);
  s.publisher.offer("events");
  sub.control(ControlKind::subscribe, "block");
  s.bus.pump();
  CHECK(sub.replies.back().kind == ReplyKind::accepted);
}

namespace {
struct TestSink final : ExternalSink {
  void push(StreamRecord record) override { records.push_back(std::move(record)); }
  void close(const std::string& why) override { reason = why; }
  std::vector<StreamRecord> records;
  std::string reason;
};
}  // namespace

TEST_CASE("an external sink found through the directory gets records within its depth, acknowledged, until cancelled",
          "[streams]") {
  Setup s;
  auto directory = std::static_pointer_cast<StreamDirectory>(find_service(directory_service_name(kPublisher)));
  REQUIRE(directory);
  REQUIRE(directory->streams().size() == 1);
  CHECK(directory->streams()[0].name == "events");
  CHECK_FALSE(directory->attach("nosuch", Policy{}, std::make_shared<TestSink>()).error.empty());
  auto sink = std::make_shared<TestSink>();
  Policy policy = *parse_policy("drop-newest,depth:2").policy;
  auto attached = directory->attach("events", policy, sink);
  REQUIRE(attached.subscription);
  for (std::uint64_t i = 1; i <= 5; ++i) s.publish(i);
  CHECK(sink->records.size() == 2);
  attached.subscription->acknowledge(2);
  s.bus.pump();  // the acknowledgement is settled on the publisher's dispatch thread
  s.publish(6);
  REQUIRE(sink->records.size() == 3);
  CHECK(sink->records[2].sequence == 3);
  CHECK(sink->records[2].dropped == 3);
  attached.subscription->cancel();
  s.bus.pump();
  CHECK(s.metric("stream_subscribers") == 0);
  sink->records.clear();
  CHECK(s.context.pool().blocks_in_use() == 0);
}

TEST_CASE("a Subscriber receives every event of a block subscription in order, acknowledging as it goes", "[streams]") {
  Setup s;
  LoopContext context(s.bus, 20, "subscriber");
  std::vector<std::uint64_t> keys;
  Subscriber subscriber(context, [&](const StreamEvent& event) {
    CHECK(event.sequence == keys.size() + 1);
    CHECK(event.bytes.total_size() == sizeof(std::uint64_t));
    keys.push_back(event.key);
  });
  subscriber.subscribe(kPublisher, "events", *parse_policy("block,depth:8").policy);
  s.bus.pump();
  std::uint64_t next = 1;
  while (next <= 1000) {
    if (s.publish(next) == Published::offered) ++next;
    else s.bus.pump();
  }
  s.bus.pump();
  CHECK(keys == range(1, 1000));
  subscriber.unsubscribe_all();
  s.bus.pump();
  CHECK(s.metric("stream_subscribers") == 0);
  CHECK(s.context.pool().blocks_in_use() == 0);
  CHECK(context.pool().blocks_in_use() == 0);
}

TEST_CASE("a thousand subscribe requests to one stream: the first 64 (the default limit) are served, the rest refused "
          "and counted, and the publisher goes on", "[streams]") {
  Bus bus;
  LoopContext context(bus, kPublisher, "publisher");
  Publisher publisher(context);  // default options: 64 subscribers per stream
  const StreamId events = publisher.offer("events");
  LoopContext sender(bus, 5000, "flood");
  for (Tid from = 1000; from < 2000; ++from) {
    ControlMessage m;
    m.policy = *parse_policy("sample:1000").policy;
    m.stream = "events";
    mem::Ref frame = sender.allocate_frame(control_bytes(m));
    REQUIRE(frame);
    encode(m, frame.data() + kFrameHeaderSize);
    REQUIRE(bus.send(from, kPublisher, function::control, from, frame) == SendStatus::ok);
    bus.pump();  // its reply goes to a subscriber that does not exist: the send fails, nothing else happens
  }
  MetricSink sink;
  publisher.report(sink);
  double subscribers = -1, refused = -1;
  for (const Metric& m : sink.metrics()) {
    if (m.name == "stream_subscribers" && m.labels.empty()) subscribers = m.value;
    if (m.name == "stream_subscriptions_refused" && m.labels.empty()) refused = m.value;
  }
  CHECK(subscribers == 64);
  CHECK(refused == 936);
  std::size_t made = 0;
  for (std::uint64_t key = 1; key <= 5000; ++key)
    CHECK(publisher.publish(events, key, [&] {
      ++made;
      return context.pool().allocate(8);
    }) == Published::offered);
  // sample:1000: the 1000th event is made once for all 64; sending it finds that none of them exists (the flood's
  // tids have no context), so all 64 are forgotten, counted lost, and no later event is made.
  CHECK(made == 1);
  CHECK(publisher.subscriptions() == 0);
  MetricSink after;
  publisher.report(after);
  for (const Metric& m : after.metrics())
    if (m.name == "stream_subscribers_lost" && m.labels.empty()) CHECK(m.value == 64);
}

namespace {
double subscriber_metric(const Subscriber& subscriber, const std::string& name) {
  MetricSink sink;
  subscriber.report(sink);
  for (const Metric& m : sink.metrics())
    if (m.name == name) return m.value;
  return -1;
}
}  // namespace

TEST_CASE("a Subscriber acknowledges every quarter of its depth, after a batch once the last acknowledgement is "
          "kAckInterval old, and when idle at its next retry: nothing stays unacknowledged for long",
          "[streams]") {
  Setup s;
  LoopContext context(s.bus, 20, "subscriber");
  std::size_t events = 0;
  Subscriber subscriber(context, [&](const StreamEvent&) { ++events; });
  subscriber.subscribe(kPublisher, "events", *parse_policy("block").policy);  // depth 64: every 16 at most
  s.bus.pump();
  const auto lag = [&] { return s.metric("subscriber_lag", "tid 20"); };

  // Records one at a time (as a TCP subscriber of large events gets them): the first batch is acknowledged (none
  // before it), then every 16th record, whatever the clock says.
  std::uint64_t key = 1;
  for (; key <= 40; ++key) {
    REQUIRE(s.publish(key) == Published::offered);
    s.bus.pump();
    CHECK(lag() < 16);
  }
  CHECK(events == 40);

  // Idle: the next retry (its worker posts one every second) acknowledges what is left.
  subscriber.retry_now();
  s.bus.pump();
  CHECK(lag() == 0);
  CHECK(s.metric("subscriber_queued", "tid 20") == 0);

  // A batch after a pause as long as kAckInterval is acknowledged at once.
  for (int i = 0; i < 2; ++i) {
    std::this_thread::sleep_for(Subscriber::kAckInterval);
    REQUIRE(s.publish(key++) == Published::offered);
    s.bus.pump();
    CHECK(lag() == 0);
  }
  CHECK(events == 42);
  // Its subscribe and acknowledgements go at once in any endpoint mode (a lone small frame held for packTimeout
  // would wait for the transport's send thread), and so do the publisher's replies.
  const auto all_send_now = [](const std::vector<std::uint8_t>& flags) {
    return !flags.empty() && std::all_of(flags.begin(), flags.end(),
                                         [](std::uint8_t f) { return (f & frame_flags::send_now) != 0; });
  };
  CHECK(s.bus.flags_sent(function::control).size() >= 4);
  CHECK(all_send_now(s.bus.flags_sent(function::control)));
  CHECK(all_send_now(s.bus.flags_sent(function::reply)));
}

TEST_CASE("a Subscriber sees the publisher's drops in each record and counts them, never a gap", "[streams]") {
  Setup s;
  LoopContext context(s.bus, 20, "subscriber");
  std::vector<std::uint64_t> keys;
  std::vector<std::uint64_t> dropped;
  Subscriber subscriber(context, [&](const StreamEvent& event) {
    keys.push_back(event.key);
    dropped.push_back(event.dropped);
  });
  subscriber.subscribe(kPublisher, "events", *parse_policy("drop-newest,depth:4").policy);
  s.bus.pump();
  s.bus.room(20, 0);  // its connection is full: records stay queued, then the policy drops
  for (std::uint64_t key = 1; key <= 20; ++key) REQUIRE(s.publish(key) == Published::offered);
  s.bus.unlimited_room(20);
  REQUIRE(s.publish(21) == Published::offered);  // still 4 pending when offered: dropped, then 1..4 sent
  s.bus.pump();
  REQUIRE(s.publish(22) == Published::offered);
  s.bus.pump();
  CHECK(keys == std::vector<std::uint64_t>{1, 2, 3, 4, 22});
  CHECK(dropped == std::vector<std::uint64_t>{17, 17, 17, 17, 17});
  CHECK(subscriber_metric(subscriber, "stream_events_dropped_by_publisher") == 17);
  CHECK(subscriber_metric(subscriber, "stream_sequence_gaps") == 0);
  CHECK(subscriber_metric(subscriber, "stream_events_received") == 5);
  CHECK(s.metric("subscriber_dropped", "tid 20") == 17);
  subscriber.unsubscribe_all();
  s.bus.pump();
  CHECK(s.context.pool().blocks_in_use() == 0);
  CHECK(context.pool().blocks_in_use() == 0);
}

TEST_CASE("a Subscriber refused or ended subscribes again until accepted, and receives the stream anew",
          "[streams]") {
  Setup s;
  LoopContext context(s.bus, 20, "subscriber");
  std::vector<std::uint64_t> sequences;
  Subscriber subscriber(context, [&](const StreamEvent& event) { sequences.push_back(event.sequence); });
  s.publisher.halt("not yet");
  subscriber.subscribe(kPublisher, "events", *parse_policy("sample:2").policy);
  s.bus.pump();
  CHECK(subscriber.accepted() == 0);
  CHECK(subscriber_metric(subscriber, "stream_refusals") == 1);
  CHECK(subscriber.last_refusal().starts_with("events of 10: application 10 offers no stream now"));

  s.publisher.offer("events");
  subscriber.retry_now();  // what its worker posts every second
  s.bus.pump();
  REQUIRE(subscriber.accepted() == 1);
  for (std::uint64_t key = 1; key <= 6; ++key) REQUIRE(s.publish(key) == Published::offered);
  s.bus.pump();
  CHECK(sequences == std::vector<std::uint64_t>{1, 2, 3});
  CHECK(s.metric("subscriber_skipped", "tid 20") == 3);

  s.publisher.halt("run over");
  s.bus.pump();
  CHECK(subscriber.accepted() == 0);
  CHECK(subscriber_metric(subscriber, "stream_subscriptions_ended") == 1);
  s.publisher.offer("events");
  subscriber.retry_now();
  s.bus.pump();
  REQUIRE(subscriber.accepted() == 1);
  for (std::uint64_t key = 7; key <= 10; ++key) REQUIRE(s.publish(key) == Published::offered);
  s.bus.pump();
  CHECK(sequences == std::vector<std::uint64_t>{1, 2, 3, 1, 2});  // a new subscription counts from 1
  CHECK(s.metric("stream_subscribers") == 1);

  // A second subscribe to the same stream replaces the first, at the publisher as here.
  subscriber.subscribe(kPublisher, "events", *parse_policy("block").policy);
  s.bus.pump();
  CHECK(subscriber.accepted() == 1);
  CHECK(s.metric("stream_subscribers") == 1);
  subscriber.unsubscribe_all();
  s.bus.pump();
  CHECK(s.metric("stream_subscribers") == 0);
  CHECK(s.context.pool().blocks_in_use() == 0);
  CHECK(context.pool().blocks_in_use() == 0);
}

TEST_CASE("a Subscriber's worker asks again by itself: refused while the publisher offers nothing, then accepted",
          "[streams]") {
  Setup s;
  LoopContext context(s.bus, 20, "subscriber");
  Subscriber subscriber(context, [](const StreamEvent&) {});
  s.publisher.halt("not yet");
  subscriber.subscribe(kPublisher, "events", *parse_policy("drop-newest").policy);
  s.bus.pump();
  REQUIRE(subscriber.accepted() == 0);
  s.publisher.offer("events");
  // The worker posts its retry once a second; the bound only keeps a broken retry from hanging the test.
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (subscriber.accepted() == 0 && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    s.bus.pump();
  }
  CHECK(subscriber.accepted() == 1);
  CHECK(s.metric("stream_subscribers") == 1);
}

TEST_CASE("with a block subscriber, an event whose bytes cannot be made is offered again, never dropped", "[streams]") {
  Setup s;
  RawSubscriber sub(s.bus, 20);
  RawSubscriber sampler(s.bus, 21);
  sub.control(ControlKind::subscribe, "block,depth:8");
  sampler.control(ControlKind::subscribe, "drop-newest,depth:8");
  s.bus.pump();
  bool dry = true;
  auto publish = [&](std::uint64_t key) {
    return s.publisher.publish(s.events, key, [&] {
      if (dry) return mem::Ref{};
      mem::Ref bytes = s.context.pool().allocate(sizeof key);
      std::memcpy(bytes.data(), &key, sizeof key);
      return bytes;
    });
  };
  CHECK(publish(1) == Published::would_block);
  dry = false;
  CHECK(publish(1) == Published::offered);
  s.bus.pump();
  CHECK(sub.keys() == std::vector<std::uint64_t>{1});
  CHECK(sampler.keys() == std::vector<std::uint64_t>{1});
  CHECK(s.metric("stream_events_dropped") == 0);
}
