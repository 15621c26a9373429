// The RU as a specification, the real unit in one process (tests/recording_context.hpp): what it answers to the
// EvM's allocations and control messages, and how its readout pump (readout::FragmentPump) sends: each assigned
// event's super-fragment to the BU named, in blocks of its batch, in bounded rounds; the work of a BU that was
// dropped or whose connection was lost is dropped, and a lost connection is reported to the EvM.
#include <catch2/catch.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/outbox.hpp"
#include "contributor_peers.hpp"
#include "readout/fragment_pump.hpp"
#include "readout/synthetic_source.hpp"
#include "recording_context.hpp"
#include "ru/ru.hpp"
#include "unit_fixtures.hpp"

using namespace daqx;
using namespace daqx::evb;
using namespace daqx::evb::test;

namespace {

constexpr Tid kRu = 1000;
constexpr Tid kBu = 3000;
constexpr Tid kOtherBu = 3001;

// What a BU received from the RU, from the block headers and pieces sent to it.
struct Received {
  std::uint64_t blocks = 0;
  std::uint64_t fragments = 0;  // pieces that start a super-fragment
  std::uint64_t last_of_batch = 0;
  std::vector<BlockHeader> headers;
};

// Blocks are counted as they go, not kept (a large allocation is megabytes).
void count_blocks(test::RecordingContext& context, std::map<Tid, Received>& received) {
  context.watch(function::fragments, [&received](Tid target, const mem::Ref& frame) {
    Received& r = received[target];
    ByteReader in(frame.data() + kFrameHeaderSize, frame.size() - kFrameHeaderSize);
    const BlockHeader h = decode_block_header(in);
    ++r.blocks;
    r.headers.push_back(h);
    if (h.flags & block_flags::last_of_batch) ++r.last_of_batch;
    for (std::uint32_t p = 0; p < h.piece_count; ++p) {
      const PieceHeader piece = decode_piece_header(in);
      in.take(piece.size);
      in.align_to(kPieceAlignment);
      if (piece.offset == 0) ++r.fragments;
    }
  });
}

// The RU, enabled and in the EvM's run kRun.
struct RunningRu {
  test::RecordingContext context{kRu, "evb::RU", test::ru_params(kEvm)};
  ru::RU ru{context};
  std::map<Tid, Received> received;

  RunningRu() {
    count_blocks(context, received);
    ru.configure();
    ru.enable();
    context.deliver(function::control, kEvm, test::control_payload({ControlKind::heartbeat, kRun, 0, kNoTid, {}}));
  }
  void allocate(std::vector<Assignment> assignments, std::uint32_t run = kRun, Tid from = kEvm) {
    context.deliver(function::allocate, from, test::allocate_payload({run, std::move(assignments)}));
  }
  // The messages of `function` the RU sent to the EvM since the last call.
  std::vector<mem::Ref> to_evm(std::uint16_t function) {
    std::vector<mem::Ref> out;
    for (test::RecordingContext::Sent& s : context.sent())
      if (s.target == kEvm && s.function == function) out.push_back(std::move(s.frame));
    context.sent().clear();
    return out;
  }
};

}  // namespace

TEST_CASE("RU: an allocation of the EvM's run sends each event's super-fragment to the BU named, in blocks of its "
          "batch, the last one marked, and its status names the run",
          "[ru]") {
  RunningRu r;
  const std::vector<mem::Ref> statuses = r.to_evm(function::ru_status);
  REQUIRE(statuses.size() == 2);  // at enable (no run heard), and on hearing the run
  const std::optional<RuStatus> status =
      decode_ru_status(statuses[1].data() + kFrameHeaderSize, statuses[1].size() - kFrameHeaderSize);
  REQUIRE(status);
  CHECK(status->run == kRun);
  r.allocate({{kBu, kGeneration, 0, 4, 1}, {kOtherBu, kGeneration, 2, 3, 5}});
  CHECK(r.received[kBu].fragments == 4);
  CHECK(r.received[kOtherBu].fragments == 3);
  CHECK(r.received[kBu].last_of_batch == 1);
  CHECK(r.received[kOtherBu].last_of_batch == 1);
  for (const BlockHeader& h : r.received[kBu].headers) {
    CHECK(h.run == kRun);
    CHECK(h.generation == kGeneration);
    CHECK(h.slot == 0);
    CHECK(h.batch_count == 4);
    CHECK(h.batch_first_event == 1);
  }
  CHECK(test::metric(r.ru, "fragments_sent") == 7);
  CHECK(test::metric(r.ru, "allocations") == 1);
  CHECK(test::metric(r.ru, "fragments_in_flight") == 0);
  CHECK(r.context.failures().empty());
}

TEST_CASE("RU: an allocation of another run, or from another than the EvM, sends nothing and is counted",
          "[ru]") {
  RunningRu r;
  r.allocate({{kBu, kGeneration, 0, 4, 1}}, kRun + 1);
  CHECK(test::metric(r.ru, "stale_frames") == 1);
  r.allocate({{kBu, kGeneration, 0, 4, 1}}, kRun, kOtherBu);
  CHECK(test::metric(r.ru, "malformed_frames") == 1);
  CHECK(r.received.empty());
  CHECK(test::metric(r.ru, "allocations") == 0);
}

TEST_CASE("RU: a BU the EvM drops loses the work still queued for it, counted dropped and never sent", "[ru]") {
  RunningRu r;
  constexpr std::uint32_t kEvents = 100000;  // megabytes: more than one bounded round of sending
  r.context.run_round([&] {
    r.allocate({{kBu, kGeneration, 0, kEvents, 1}});
    r.context.deliver(function::control, kEvm,
                      test::control_payload({ControlKind::bu_down, kRun, kGeneration + 1, kBu, "dropped"}));
  });
  const double sent = test::metric(r.ru, "fragments_sent");
  const double dropped = test::metric(r.ru, "events_dropped");
  CHECK(dropped > 0);
  CHECK(sent + dropped == kEvents);
  CHECK(r.received[kBu].last_of_batch == 0);
  CHECK(test::metric(r.ru, "bu_downs") == 1);
  CHECK(test::metric(r.ru, "fragments_in_flight") == 0);
}

TEST_CASE("RU: a lost connection to a BU drops that BU's work and tells the EvM, naming the BU and its generation",
          "[ru]") {
  RunningRu r;
  r.to_evm(function::ru_status);
  r.context.lose_connection(kBu);
  constexpr std::uint32_t kEvents = 100000;  // more than one bounded round: what the first round did not send stays
  r.allocate({{kBu, kGeneration, 0, kEvents, 1}, {kOtherBu, kGeneration, 1, 2, kEvents + 1}});
  // Every block that failed is a lost send, counted and reported (the EvM drops the BU at the first report).
  const double lost = test::metric(r.ru, "lost_connections");
  CHECK(lost > 0);
  CHECK(test::metric(r.ru, "send_errors") == lost);
  const double dropped = test::metric(r.ru, "events_dropped");
  CHECK(dropped > 0);
  CHECK(test::metric(r.ru, "fragments_sent") == kEvents - dropped + 2);
  CHECK(r.received.count(kBu) == 0);
  CHECK(r.received[kOtherBu].fragments == 2);  // the other BU is not held up
  const std::vector<mem::Ref> reports = r.to_evm(function::control);
  REQUIRE(static_cast<double>(reports.size()) == lost);
  for (const mem::Ref& report : reports) {
    const std::optional<Control> c = decode_control(report.data() + kFrameHeaderSize, report.size() - kFrameHeaderSize);
    REQUIRE(c);
    CHECK(c->kind == ControlKind::bu_down);
    CHECK(c->subject == kBu);
    CHECK(c->generation == kGeneration);
  }
}

TEST_CASE("RU: declared down by the EvM, it fails with the EvM's reason and sends nothing more", "[ru]") {
  RunningRu r;
  r.context.deliver(function::control, kEvm,
                    test::control_payload({ControlKind::ru_down, kRun, 0, kRu, "silent for 5 s"}));
  REQUIRE(r.context.failures().size() == 1);
  CHECK_THAT(r.context.failures()[0], Catch::Contains("declared this RU down") && Catch::Contains("silent for 5 s"));
  r.allocate({{kBu, kGeneration, 0, 4, 1}});
  CHECK(r.received.empty());
}

TEST_CASE("readout pump: a large allocation goes out in bounded rounds, the rest posted after each, every event "
          "once and in order",
          "[ru][readout]") {
  test::RecordingContext context(kRu, "evb::RU", ParamSet{});
  std::map<Tid, Received> received;
  count_blocks(context, received);
  Outbox outbox(context);
  int rounds = 0;
  readout::FragmentPump pump(context, outbox, [&rounds] { ++rounds; });
  const readout::SyntheticSource source(test::small_shape(), kRu);
  pump.configure(source, 65536);
  pump.start();
  pump.start_run(kRun);
  constexpr std::uint32_t kEvents = 100000;
  std::uint64_t blocks_in_first_round = 0;
  context.run_round([&] {
    pump.add({kBu, kGeneration, 0, kEvents, 1});
    pump.pump();
    blocks_in_first_round = received[kBu].blocks;
  });
  CHECK(blocks_in_first_round > 0);
  CHECK(blocks_in_first_round <= 64);  // FragmentSender's bound on a round
  CHECK(rounds > 1);
  CHECK(received[kBu].fragments == kEvents);
  CHECK(received[kBu].last_of_batch == 1);
  CHECK(pump.counters().fragments_sent.load() == kEvents);
  CHECK(pump.counters().events_queued.load() == 0);
  CHECK(pump.counters().blocks_sent.load() == received[kBu].blocks);
}
