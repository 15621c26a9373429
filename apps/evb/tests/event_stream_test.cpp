// The BU's stream `events` as a specification, the real BU in one process with its peers (builder_rig.hpp) and a
// subscriber played by the test through the stream protocol: every event a subscriber takes is its event record
// (docs/evb-files.md) made of one header block and views of the blocks the BU received, never a copy of them; a
// block subscriber that does not acknowledge keeps the BU's slots, and gets every event once it does.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "builder_rig.hpp"
#include "daqx/streams/protocol.hpp"
#include "files/event_file_reader.hpp"
#include "files/event_record_check.hpp"

using namespace daqx;
using namespace daqx::evb;
using namespace daqx::evb::test;

namespace {

constexpr Tid kSubscriber = 4000;

// The subscriber's side: what the BU sent it, checked as it arrives.
struct Subscriber {
  std::uint64_t subscription = 0;
  std::uint64_t received = 0;
  std::uint64_t acknowledged = 0;
  std::uint64_t last_key = 0;
  std::uint64_t gaps = 0, out_of_order = 0, bad_records = 0, copied_pieces = 0, dropped = 0;

  // The peers' memory: a piece of a record that lies there is a view of a block the BU received.
  std::vector<mem::Chunk> peer_memory;
  bool in_peer_memory(const std::byte* at) const {
    for (const mem::Chunk& c : peer_memory)
      if (at >= c.base && at < c.base + c.bytes) return true;
    return false;
  }

  void take(const mem::Ref& frame) {
    const auto header = streams::parse_data(std::span<const std::byte>(frame.data() + kFrameHeaderSize, frame.size() - kFrameHeaderSize));
    REQUIRE(header.message);
    if (header.message->sequence == 0) return;  // a probe: no event
    if (header.message->sequence != received + 1) ++gaps;
    if (header.message->key <= last_key) ++out_of_order;
    received = header.message->sequence;
    last_key = header.message->key;
    dropped = header.message->dropped;
    // The record: the BU's header block, then the pieces (views into the peers' blocks) and zero padding.
    const mem::Block* head = frame.head()->next();
    REQUIRE(head != nullptr);
    std::vector<std::byte> bytes(head->data(), head->data() + head->size());
    for (const mem::Block* b = head->next(); b != nullptr; b = b->next()) {
      const bool padding = b->size() < kFragmentAlignment &&
                           std::all_of(b->data(), b->data() + b->size(), [](std::byte x) { return x == std::byte{0}; });
      if (!padding && !in_peer_memory(b->data())) ++copied_pieces;
      bytes.insert(bytes.end(), b->data(), b->data() + b->size());
    }
    EventFileRecord record;
    if (!parse_event_record(bytes, 0, record).empty() || record.bytes != bytes.size() ||
        record.event != header.message->key || !verify_event_record(record).ok())
      ++bad_records;
  }
};

void control(BuilderWithPeers& rig, const streams::ControlMessage& m) {
  std::vector<std::byte> payload(streams::control_bytes(m));
  streams::encode(m, payload.data());
  rig.bu_side.deliver(streams::function::control, kSubscriber, payload);
}

// Subscribes with `policy` and watches what the BU sends the subscriber.
void subscribe(BuilderWithPeers& rig, Subscriber& subscriber, const char* policy) {
  subscriber.peer_memory = rig.peers.side().pool().chunks();
  rig.bu_side.watch(streams::function::data, [&subscriber](Tid target, const mem::Ref& frame) {
    CHECK(target == kSubscriber);
    subscriber.take(frame);
  });
  rig.bu_side.watch(streams::function::reply, [&subscriber](Tid, const mem::Ref& frame) {
    const auto reply = streams::parse_reply(std::span<const std::byte>(frame.data() + kFrameHeaderSize, frame.size() - kFrameHeaderSize));
    REQUIRE(reply.message);
    CHECK(reply.message->kind != streams::ReplyKind::refused);
    if (reply.message->kind == streams::ReplyKind::accepted) subscriber.subscription = reply.message->subscription;
  });
  streams::ControlMessage m;
  m.kind = streams::ControlKind::subscribe;
  m.policy = *streams::parse_policy(policy).policy;
  m.stream = "events";
  control(rig, m);
  REQUIRE(subscriber.subscription != 0);
}

// Acknowledges everything received, as often as that brings more.
void acknowledge_all(BuilderWithPeers& rig, Subscriber& subscriber) {
  while (subscriber.received > subscriber.acknowledged) {
    streams::ControlMessage m;
    m.kind = streams::ControlKind::acknowledge;
    m.subscription = subscriber.subscription;
    m.sequence = subscriber.acknowledged = subscriber.received;
    control(rig, m);
  }
}

}  // namespace

TEST_CASE("a BU sends each event its subscriber takes as its event record, a header block and views of the blocks "
          "it received (no piece copied), which reads and verifies as a file's record",
          "[evb][bu][stream]") {
  BuilderWithPeers rig(4);
  rig.start();
  Subscriber subscriber;
  subscribe(rig, subscriber, "drop-newest,depth:4096");
  const Outcome outcome = build(rig, 800);
  CHECK(outcome.given_back == 800);
  CHECK(subscriber.received == 800);
  CHECK(subscriber.gaps == 0);
  CHECK(subscriber.out_of_order == 0);
  CHECK(subscriber.bad_records == 0);
  CHECK(subscriber.copied_pieces == 0);
  CHECK(test::metric(rig.bu, "stream_pieces_copied") == 0);
  CHECK(rig.bu_side.failures().empty());
  rig.bu.halt();
  CHECK(rig.peers.side().pool().stats().blocks_used() == 0);  // the records' views let go with the frames
}

TEST_CASE("a block subscriber that acknowledges nothing keeps the BU's slots (the events wait, none is dropped), "
          "and receives every event in order as it acknowledges",
          "[evb][bu][stream]") {
  BuilderWithPeers rig(4);
  rig.start();
  Subscriber subscriber;
  subscribe(rig, subscriber, "block,depth:4");

  // No acknowledgement: 4 events go out, then the BU holds every slot it fills, and offers no more.
  const Outcome held = build(rig, 800);
  CHECK(subscriber.received == 4);
  CHECK(held.given_back < held.assigned);
  CHECK(subscriber.dropped == 0);

  // Acknowledged as it goes: every event built reaches it, and every slot comes back.
  acknowledge_all(rig, subscriber);
  CHECK(subscriber.gaps == 0);
  CHECK(subscriber.out_of_order == 0);
  CHECK(subscriber.bad_records == 0);
  CHECK(subscriber.dropped == 0);
  CHECK(test::metric(rig.bu, "events_built") == static_cast<double>(held.assigned));
  CHECK(subscriber.received == held.assigned);
  rig.bu.halt();
}
