// The real BU in one process with its peers (the EvM's and the RUs' real fragment senders, test::ContributorPeers)
// and the EvM's part played by the test: a specification rig for the BU's assembly and its stream.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
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

namespace daqx::evb::test {

using bu::BU;


constexpr Tid kBu = 3000;

inline std::vector<Tid> with_evm(const std::vector<Tid>& rus) {
  std::vector<Tid> all{kEvm};
  all.insert(all.end(), rus.begin(), rus.end());
  return all;
}

// How the blocks reach the BU: one frame at a time; as each sender's batch sends grouped them (a batch from one
// contributor); or every block of a batch of events from every contributor together, in batches of the most the
// executive hands over at once (runs of many contributors in one batch).
enum class Delivery { single_frames, sender_batches, all_together };

// The BU under test and its peers: the EvM and the RUs (ContributorPeers), whose blocks the test hands to
// the BU as coming from each.
struct BuilderWithPeers {
  ContributorPeers peers;
  RecordingContext bu_side;
  BU bu;
  Delivery delivery;
  std::vector<bool> down;
  std::uint64_t next_event = 1;
  std::size_t largest_delivery = 0;  // frames in one call of the BU's handler, the most

  explicit BuilderWithPeers(std::size_t rus, Delivery how = Delivery::single_frames,
                            const FragmentShape& shape = small_shape())
      : peers(with_evm(tids(1000, rus)), kRun, shape),
        bu_side(kBu, "evb::BU", bu_params(kEvm, {peers.contributors().begin() + 1, peers.contributors().end()}, 16)),
        bu(bu_side), delivery(how), down(peers.contributors().size(), false) {}

  // Enable, the EvM's first heartbeat of the run and its reset: the BU then offers slots.
  void start() {
    bu.configure();
    bu.enable();
    bu_side.deliver(function::control, kEvm, control_payload({ControlKind::heartbeat, kRun, 0, kNoTid, {}}));
    bu_side.deliver(function::control, kEvm, control_payload({ControlKind::reset, kRun, kGeneration, kBu, {}}));
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
    bu_side.deliver(function::control, kEvm, control_payload({ControlKind::ru_down, kRun, 0, peers.tid(c), "test"}));
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
// among the contributors) goes down once `fail_after` events were assigned, in the middle of a batch;
// each_round (if any) runs before each round (a subscriber acknowledging, say).
inline Outcome build(BuilderWithPeers& rig, std::uint64_t events, std::size_t failing = 0, std::uint64_t fail_after = 0,
                     const std::function<void()>& each_round = {}) {
  Outcome outcome;
  std::map<std::uint64_t, std::uint32_t> out;  // first event -> count, of batches given to the BU and not back
  std::map<std::uint64_t, int> back;
  std::vector<std::uint32_t> free_slots;
  for (int rounds = 0; rounds < 100000; ++rounds) {
    if (each_round) each_round();
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


}  // namespace daqx::evb::test
