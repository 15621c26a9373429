// The EvM's assignment at 512 RUs x 512 BUs as a specification: the real EvM, in one process, with every RU
// reporting and every BU asking as real ones would. Every event is assigned once, to exactly one BU, and every
// RU is told every assignment in the same order; BUs of equal priority asking together are served in turn, each
// getting as many batches as the others; every batch comes back and nothing stays in flight.
#include <catch2/catch.hpp>

#include <chrono>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "evm/evm.hpp"
#include "recording_context.hpp"
#include "unit_fixtures.hpp"

using namespace daqx;
using namespace daqx::evb;
using namespace daqx::evb::test;
using namespace daqx::evb::evm;

namespace {

constexpr Tid kFirstRu = 1000;
constexpr Tid kFirstBu = 3000;
constexpr std::uint32_t kEventsPerBatch = 8;

// The EvM under test and what it told its peers: the assignments in the order the first RU got them (every other
// RU checked against it as its frames go), and the trigger fragment batches each BU got.
struct ManagerWithPeers {
  std::vector<Tid> bus, rus;
  std::uint32_t slots;
  test::RecordingContext context;
  EvM evm;
  std::vector<Assignment> order;         // as the first RU was told
  std::vector<std::size_t> told;         // by RU: how many of order it was told
  std::uint64_t told_out_of_order = 0;   // assignments an RU was told that differ from the first RU's
  std::map<std::uint64_t, Tid> trigger_batches;  // first event -> BU, from the last block of each batch
  std::uint64_t trigger_batches_twice = 0;
  std::map<Tid, std::uint32_t> generation;       // by BU, from its reset

  ManagerWithPeers(std::size_t ru_count, std::size_t bu_count, std::uint32_t slots_per_bu, std::uint64_t max_events,
                   const std::vector<std::pair<std::string, std::string>>& more_params = {},
                   std::uint32_t events_per_batch = kEventsPerBatch)
      : bus(test::tids(kFirstBu, bu_count)), rus(test::tids(kFirstRu, ru_count)), slots(slots_per_bu),
        context(kEvm, "evb::EvM", with(test::evm_params(bus, rus, events_per_batch, max_events), more_params)),
        evm(context), told(ru_count, 0) {
    context.watch(function::allocate, [this](Tid ru, const mem::Ref& frame) {
      const auto allocate = decode_allocate(frame.data() + kFrameHeaderSize, frame.size() - kFrameHeaderSize);
      REQUIRE(allocate.has_value());
      const std::size_t r = ru - kFirstRu;
      for (const Assignment& a : allocate->assignments) {
        if (r == 0) order.push_back(a);
        else if (told[r] >= order.size() || !same(order[told[r]], a)) ++told_out_of_order;
        ++told[r];
      }
    });
    context.watch(function::fragments, [this](Tid bu, const mem::Ref& frame) {
      ByteReader in(frame.data() + kFrameHeaderSize, frame.size() - kFrameHeaderSize);
      const BlockHeader h = decode_block_header(in);
      if ((h.flags & block_flags::last_of_batch) == 0) return;
      if (!trigger_batches.emplace(h.batch_first_event, bu).second) ++trigger_batches_twice;
    });
  }

  static ParamSet with(ParamSet params, const std::vector<std::pair<std::string, std::string>>& more) {
    for (const auto& [name, value] : more) test::set(params, name, value);
    return params;
  }

  static bool same(const Assignment& a, const Assignment& b) {
    return a.bu == b.bu && a.generation == b.generation && a.slot == b.slot && a.count == b.count &&
           a.first_event == b.first_event;
  }

  // Enabled, every RU reported, every BU reset and answering with its generation (no slots yet).
  void start() {
    evm.configure();
    evm.enable();
    for (std::size_t r = 0; r < rus.size(); ++r)
      context.deliver(function::ru_status, rus[r], test::ru_status_payload({kRun, r + 1, 0, 0}));
    for (std::size_t b = 0; b < bus.size(); ++b) context.deliver(function::request, bus[b], request(b, 0, {}, {}));
    for (auto& s : context.sent())
      if (s.function == function::control)
        if (auto c = decode_control(s.frame.data() + kFrameHeaderSize, s.frame.size() - kFrameHeaderSize);
            c && c->kind == ControlKind::reset)
          generation[s.target] = c->generation;
    context.sent().clear();
  }

  std::vector<std::byte> request(std::size_t b, std::uint32_t generation_now, std::vector<std::uint32_t> free_slots,
                                 std::vector<Discard> discards) const {
    Request r;
    r.run = kRun;
    r.generation = generation_now;
    r.incarnation = b + 1;
    r.priority = 255;
    r.total_slots = slots;
    r.free_slots = std::move(free_slots);
    r.discards = std::move(discards);
    return test::request_payload(r);
  }

  // Every BU asks in the same dispatch round: it gives back the batches it holds and offers `offer` slots.
  void every_bu_asks(std::uint32_t offer) {
    std::map<Tid, std::vector<Discard>> held;
    for (const Assignment& a : order)
      if (trigger_batches.count(a.first_event) != 0 && !returned.contains(a.first_event)) {
        held[a.bu].push_back({a.first_event, a.count, a.slot, 0, 0});
        returned.insert(a.first_event);
      }
    context.run_round([&] {
      for (std::size_t b = 0; b < bus.size(); ++b) {
        std::vector<std::uint32_t> free;
        for (std::uint32_t s = 0; s < offer; ++s) free.push_back(s);
        context.deliver(function::request, bus[b], request(b, generation[bus[b]], free, held[bus[b]]));
      }
    });
    context.sent().clear();  // controls, if any: none expected to matter here
  }

  std::set<std::uint64_t> returned;
};

}  // namespace

TEST_CASE("an EvM with 512 RUs and 512 BUs assigns every event once to exactly one BU, tells every RU every "
          "assignment in order, serves BUs of equal priority in turn, and gets every batch back",
          "[evb][evm][scale]") {
  constexpr std::size_t kUnits = 512;
  constexpr std::uint32_t kSlots = 4;
  constexpr std::uint64_t kEvents = std::uint64_t{kUnits} * kSlots * kEventsPerBatch * 2;  // two rounds of slots
  ManagerWithPeers rig(kUnits, kUnits, kSlots, kEvents);
  rig.start();
  REQUIRE(rig.generation.size() == kUnits);

  rig.every_bu_asks(kSlots);
  REQUIRE(rig.order.size() == kUnits * kSlots);
  // Served in turn: the first batch of every BU before the second of any, and so on.
  for (std::size_t p = 0; p < rig.order.size(); ++p) CHECK(rig.order[p].bu == rig.bus[p % kUnits]);

  rig.every_bu_asks(kSlots);  // the batches back, the slots offered again: the second half of the events
  REQUIRE(rig.order.size() == 2 * kUnits * kSlots);
  for (std::size_t p = 0; p < rig.order.size(); ++p) CHECK(rig.order[p].bu == rig.bus[p % kUnits]);

  rig.every_bu_asks(0);  // the last batches back

  // Every event once, to one BU, in one batch: the batches tile 1..kEvents.
  std::uint64_t next = 1;
  std::map<std::uint64_t, const Assignment*> by_first;
  for (const Assignment& a : rig.order) by_first[a.first_event] = &a;
  for (const auto& [first, a] : by_first) {
    CHECK(first == next);
    CHECK(a->count == kEventsPerBatch);
    CHECK(rig.trigger_batches.at(first) == a->bu);  // its trigger fragments went to the BU it was assigned to
    next = first + a->count;
  }
  CHECK(next == kEvents + 1);
  CHECK(rig.trigger_batches.size() == rig.order.size());
  CHECK(rig.trigger_batches_twice == 0);
  // Every RU told every assignment, in the same order.
  CHECK(rig.told_out_of_order == 0);
  for (std::size_t told : rig.told) CHECK(told == rig.order.size());

  CHECK(test::metric(rig.evm, "events_assigned") == kEvents);
  CHECK(test::metric(rig.evm, "events_completed") == kEvents);
  CHECK(test::metric(rig.evm, "events_in_flight") == 0);
  CHECK(test::metric(rig.evm, "events_lost") == 0);
  CHECK(test::metric(rig.evm, "unexpected_discards") == 0);
  CHECK(test::metric(rig.evm, "bus_alive") == kUnits);
  CHECK(test::metric(rig.evm, "rus_alive") == kUnits);
  CHECK(test::metric(rig.evm, "malformed_frames") == 0);
  CHECK(rig.context.failures().empty());
  rig.evm.halt();
}

TEST_CASE("at a slow trigger a short batch waits until its oldest event has waited batchWait, however long the BUs' "
          "credits have waited: each holds at least rate x batchWait events, not one event per round",
          "[evb][evm]") {
  // 1000 events/s and batches of 4096 events, which take 4 s to fill: every batch is a short one. The clock is
  // real here (the trigger rate is in wall time); only the batch sizes are checked, which a slow machine makes
  // larger, never smaller.
  constexpr double kRate = 1000, kWait = 0.1;
  ManagerWithPeers rig(8, 8, 4, 0, {{"triggerRate", "1000"}, {"batchWait", "0.1"}}, 4096);
  rig.start();
  rig.every_bu_asks(4);  // 32 credits wait from here on
  // RU statuses, each a round of assignment, a millisecond apart, until three batches are out.
  const auto limit = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  for (std::uint64_t round = 1; rig.order.size() < 3 && std::chrono::steady_clock::now() < limit; ++round) {
    rig.context.deliver(function::ru_status, rig.rus[0], test::ru_status_payload({kRun, 1, round, round * 64}));
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  REQUIRE(rig.order.size() >= 3);
  std::uint64_t next = 1;
  for (const Assignment& a : rig.order) {
    INFO("batch from event " << a.first_event);
    CHECK(a.first_event == next);
    CHECK(a.count >= static_cast<std::uint32_t>(kRate * kWait));
    next = a.first_event + a.count;
  }
  CHECK(rig.context.failures().empty());
  rig.evm.halt();
}
