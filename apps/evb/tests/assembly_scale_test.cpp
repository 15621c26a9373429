// The BU's assembly at 512 RUs as a specification: the real BU, in one process, fed by the real fragment
// senders of the EvM and 512 RUs (synthetic data, checked by the BU), answering its requests as the EvM would.
// Every event is built exactly once and given back, none is lost, duplicated or corrupt; an RU that goes down
// mid-way makes the events after it incomplete, not lost; every block is let go at the end. The BU takes its
// blocks in batches: from batch sends of the senders, from many senders arriving together, or one at a time (a
// sender that does not batch), and builds the same events from each.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "bu/bu.hpp"
#include "contributor_peers.hpp"
#include "recording_context.hpp"
#include "unit_fixtures.hpp"

using namespace daqx;
using namespace daqx::evb;
using namespace daqx::evb::test;
using namespace daqx::evb::bu;
using namespace daqx::evb::readout;

namespace {

constexpr Tid kBu = 3000;

std::vector<Tid> with_evm(const std::vector<Tid>& rus) {
  std::vector<Tid> all{kEvm};
  all.insert(all.end(), rus.begin(), rus.end());
  return all;
}

// How the blocks reach the BU: one frame at a time; as each sender's batch sends grouped them (a batch from one
// contributor); or every block of a batch of events from every contributor together, in batches of the most the
// executive hands over at once (runs of many contributors in one batch).
enum class Delivery { single_frames, sender_batches, all_together };

// The BU under test and its peers: the EvM and the RUs (test::ContributorPeers), whose blocks the test hands to
// the BU as coming from each.
struct BuilderWithPeers {
  test::ContributorPeers peers;
  test::RecordingContext bu_side;
  BU bu;
  Delivery delivery;
  std::vector<bool> down;
  std::uint64_t next_event = 1;
  std::size_t largest_delivery = 0;  // frames in one call of the BU's handler, the most

  explicit BuilderWithPeers(std::size_t rus, Delivery how = Delivery::single_frames,
                            const FragmentShape& shape = test::small_shape())
      : peers(with_evm(test::tids(1000, rus)), kRun, shape),
        bu_side(kBu, "evb::BU", test::bu_params(kEvm, {peers.contributors().begin() + 1, peers.contributors().end()}, 16)),
        bu(bu_side), delivery(how), down(peers.contributors().size(), false) {}

  // Enable, the EvM's first heartbeat of the run and its reset: the BU then offers slots.
  void start() {
    bu.configure();
    bu.enable();
    bu_side.deliver(function::control, kEvm, test::control_payload({ControlKind::heartbeat, kRun, 0, kNoTid, {}}));
    bu_side.deliver(function::control, kEvm, test::control_payload({ControlKind::reset, kRun, kGeneration, kBu, {}}));
  }

  // Every contributor that is not down (and not `holding_back`) sends its super-fragments of the batch.
  void send_batch(const Assignment& a, std::optional<std::size_t> holding_back = std::nullopt) {
    std::vector<std::pair<Tid, mem::Ref>> together;
    for (std::size_t c = 0; c < peers.contributors().size(); ++c) {
      if (down[c] || c == holding_back) continue;
      switch (delivery) {
        case Delivery::single_frames:
          for (mem::Ref& block : peers.blocks(c, a)) {
            bu_side.deliver(function::fragments, peers.tid(c), std::move(block));
            largest_delivery = std::max<std::size_t>(largest_delivery, 1);
          }
          break;
        case Delivery::sender_batches:
          for (std::vector<mem::Ref>& sent : peers.batches(c, a)) {
            std::vector<std::pair<Tid, mem::Ref>> batch;
            for (mem::Ref& block : sent) batch.emplace_back(peers.tid(c), std::move(block));
            deliver(std::move(batch));
          }
          break;
        case Delivery::all_together:
          for (mem::Ref& block : peers.blocks(c, a)) {
            together.emplace_back(peers.tid(c), std::move(block));
            if (together.size() == kMaxBatchFrames) deliver(std::exchange(together, {}));
          }
          break;
      }
    }
    if (!together.empty()) deliver(std::move(together));
  }
  void deliver(std::vector<std::pair<Tid, mem::Ref>>&& batch) {
    largest_delivery = std::max(largest_delivery, batch.size());
    bu_side.deliver_batch(function::fragments, std::move(batch));
  }

  void ru_down(std::size_t c) {
    down[c] = true;
    bu_side.deliver(function::control, kEvm, test::control_payload({ControlKind::ru_down, kRun, 0, peers.tid(c), "test"}));
  }

  // The requests the BU sent since the last call.
  std::vector<Request> requests() {
    std::vector<Request> out;
    for (auto& s : bu_side.sent())
      if (s.function == function::request)
        if (auto r = decode_request(s.frame.data() + kFrameHeaderSize, s.frame.size() - kFrameHeaderSize)) out.push_back(*r);
    bu_side.sent().clear();
    return out;
  }
};

struct Outcome {
  std::uint64_t assigned = 0, given_back = 0, incomplete = 0, corrupt = 0, duplicates = 0;
};

// Runs `events` events through the BU in batches of 8, as its requests offer slots; the RU `failing` (an index
// among the contributors) goes down once `fail_after` events were assigned, in the middle of a batch.
Outcome build(BuilderWithPeers& rig, std::uint64_t events, std::size_t failing = 0, std::uint64_t fail_after = 0) {
  Outcome outcome;
  std::map<std::uint64_t, std::uint32_t> out;  // first event -> count, of batches given to the BU and not back
  std::map<std::uint64_t, int> back;
  std::vector<std::uint32_t> free_slots;
  for (int rounds = 0; rounds < 100000; ++rounds) {
    for (const Request& r : rig.requests()) {
      for (const Discard& d : r.discards) {
        if (++back[d.first_event] > 1 || out.count(d.first_event) == 0 || out[d.first_event] != d.count)
          ++outcome.duplicates;
        out.erase(d.first_event);
        outcome.given_back += d.count;
        outcome.incomplete += d.incomplete;
        outcome.corrupt += d.corrupt;
      }
      free_slots.insert(free_slots.end(), r.free_slots.begin(), r.free_slots.end());
    }
    if (outcome.assigned == events && out.empty()) break;
    // Every batch is built as soon as it is sent, and each built batch comes back with an offer: nothing offered
    // (or nothing left to assign) with batches out would be a batch the BU lost.
    if (free_slots.empty() || outcome.assigned == events) break;
    const std::uint32_t slot = free_slots.back();
    free_slots.pop_back();
    const Assignment a{kBu, kGeneration, slot, 8, rig.next_event};
    rig.next_event += a.count;
    outcome.assigned += a.count;
    out[a.first_event] = a.count;
    const bool fails_now = failing != 0 && !rig.down[failing] && outcome.assigned > fail_after;
    rig.send_batch(a, fails_now ? std::optional<std::size_t>(failing) : std::nullopt);
    if (fails_now) rig.ru_down(failing);  // its events of this batch were never sent: built without it
  }
  return outcome;
}

}  // namespace

TEST_CASE("a BU with 512 RUs builds every event exactly once, gives every batch back once, none lost, duplicated "
          "or corrupt, and lets every block go",
          "[evb][bu][scale]") {
  BuilderWithPeers rig(512);
  rig.start();
  const Outcome outcome = build(rig, 2000);
  CHECK(outcome.assigned == 2000);
  CHECK(outcome.given_back == outcome.assigned);
  CHECK(outcome.duplicates == 0);
  CHECK(outcome.incomplete == 0);
  CHECK(outcome.corrupt == 0);
  CHECK(test::metric(rig.bu, "events_built") == 2000);
  CHECK(test::metric(rig.bu, "fragments_received") == 2000.0 * 513);
  CHECK(test::metric(rig.bu, "duplicate_pieces") == 0);
  CHECK(test::metric(rig.bu, "protocol_errors") == 0);
  CHECK(test::metric(rig.bu, "malformed_frames") == 0);
  CHECK(rig.bu_side.failures().empty());
  rig.bu.halt();
  CHECK(rig.peers.side().pool().stats().blocks_used() == 0);  // the BU held the peers' blocks: all let go
}

TEST_CASE("a BU with 512 RUs, one of which goes down mid-way, builds the events after it incomplete and loses none",
          "[evb][bu][scale]") {
  BuilderWithPeers rig(512);
  rig.start();
  const std::size_t failing = 300;  // a contributor index: an RU
  const Outcome outcome = build(rig, 2000, failing, 1000);
  CHECK(outcome.assigned == 2000);
  CHECK(outcome.given_back == outcome.assigned);
  CHECK(outcome.duplicates == 0);
  CHECK(outcome.corrupt == 0);
  CHECK(outcome.incomplete == 1000);  // every event from the batch it went down in (events 1001..2000)
  CHECK(test::metric(rig.bu, "events_built") == 2000);
  CHECK(test::metric(rig.bu, "events_incomplete") == 1000);
  CHECK(test::metric(rig.bu, "protocol_errors") == 0);
  CHECK(rig.bu_side.failures().empty());
  rig.bu.halt();
  CHECK(rig.peers.side().pool().stats().blocks_used() == 0);
}

namespace {

// What the BU built and received, as its report says.
struct Built {
  Outcome outcome;
  double events = 0, bytes = 0, fragments = 0, blocks = 0, errors = 0;
  bool operator==(const Built& o) const {
    return outcome.assigned == o.outcome.assigned && outcome.given_back == o.outcome.given_back &&
           outcome.incomplete == o.outcome.incomplete && outcome.corrupt == o.outcome.corrupt &&
           outcome.duplicates == o.outcome.duplicates && events == o.events && bytes == o.bytes &&
           fragments == o.fragments && blocks == o.blocks && errors == o.errors;
  }
};

// 4 RUs with super-fragments of about 80 KB (two blocks each, ten-odd per RU and batch of 8 events), the blocks
// delivered `how`; one RU goes down mid-way.
Built build_with(Delivery how, std::size_t& largest_delivery) {
  FragmentShape shape = test::small_shape();
  shape.mean_size = 40000;
  BuilderWithPeers rig(4, how, shape);
  rig.start();
  Built b;
  b.outcome = build(rig, 160, 3, 80);
  b.events = test::metric(rig.bu, "events_built");
  b.bytes = test::metric(rig.bu, "bytes_built");
  b.fragments = test::metric(rig.bu, "fragments_received");
  b.blocks = test::metric(rig.bu, "blocks_received");
  b.errors = test::metric(rig.bu, "protocol_errors") + test::metric(rig.bu, "malformed_frames") +
             test::metric(rig.bu, "duplicate_pieces") + test::metric(rig.bu, "stale_blocks");
  CHECK(rig.bu_side.failures().empty());
  rig.bu.halt();
  CHECK(rig.peers.side().pool().stats().blocks_used() == 0);
  largest_delivery = rig.largest_delivery;
  return b;
}

}  // namespace

TEST_CASE("a BU that takes batches builds from frames that came singly (a sender that does not batch), from each "
          "sender's batch sends, and from many senders' blocks arriving together, the same events",
          "[evb][bu][batch]") {
  std::size_t largest = 0;
  const Built single = build_with(Delivery::single_frames, largest);
  CHECK(largest == 1);
  CHECK(single.outcome.assigned == 160);
  CHECK(single.outcome.given_back == 160);
  CHECK(single.outcome.incomplete == 80);  // the RU down from the batch it went down in
  CHECK(single.outcome.corrupt == 0);
  CHECK(single.events == 160);
  CHECK(single.blocks > single.fragments);  // super-fragments span blocks
  CHECK(single.errors == 0);
  const Built sender_batches = build_with(Delivery::sender_batches, largest);
  CHECK(largest > 1);
  CHECK(sender_batches == single);
  const std::size_t largest_sent = largest;
  const Built together = build_with(Delivery::all_together, largest);
  CHECK(largest > largest_sent);  // runs of several contributors in one batch
  CHECK(together == single);
}
