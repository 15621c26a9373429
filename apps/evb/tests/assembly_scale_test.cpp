// The BU's assembly at 512 RUs as a specification: the real BU, in one process, fed by the real fragment
// senders of the EvM and 512 RUs (synthetic data, checked by the BU), answering its requests as the EvM would.
// Every event is built exactly once and given back, none is lost, duplicated or corrupt; an RU that goes down
// mid-way makes the events after it incomplete, not lost; every block is let go at the end.
#include <catch2/catch.hpp>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
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

// The BU under test and its peers: the EvM and the RUs (test::ContributorPeers), whose blocks the test hands to
// the BU as coming from each.
struct BuilderWithPeers {
  test::ContributorPeers peers;
  test::RecordingContext bu_side;
  BU bu;
  std::vector<bool> down;
  std::uint64_t next_event = 1;

  explicit BuilderWithPeers(std::size_t rus)
      : peers(with_evm(test::tids(1000, rus)), kRun),
        bu_side(kBu, "evb::BU", test::bu_params(kEvm, {peers.contributors().begin() + 1, peers.contributors().end()}, 16)),
        bu(bu_side), down(peers.contributors().size(), false) {}

  // Enable, the EvM's first heartbeat of the run and its reset: the BU then offers slots.
  void start() {
    bu.configure();
    bu.enable();
    bu_side.deliver(function::control, kEvm, test::control_payload({ControlKind::heartbeat, kRun, 0, kNoTid, {}}));
    bu_side.deliver(function::control, kEvm, test::control_payload({ControlKind::reset, kRun, kGeneration, kBu, {}}));
  }

  // Every contributor that is not down (and not `holding_back`) sends its super-fragments of the batch.
  void send_batch(const Assignment& a, std::optional<std::size_t> holding_back = std::nullopt) {
    for (std::size_t c = 0; c < peers.contributors().size(); ++c) {
      if (down[c] || c == holding_back) continue;
      for (mem::Ref& block : peers.blocks(c, a)) bu_side.deliver(function::fragments, peers.tid(c), std::move(block));
    }
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
