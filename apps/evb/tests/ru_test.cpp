// The RU as a specification, the real unit in one process (tests/recording_context.hpp): what it answers to the
// EvM's allocations and control messages, and how its readout pump (readout::FragmentPump) sends: each assigned
// event's super-fragment to the BU named, in blocks of its batch, in bounded rounds, a BU's blocks in one batch send
// (blocksPerSend at most); what a BU cannot take yet goes later, in order; the work of a BU that was dropped or
// whose connection was lost is dropped, and a lost connection is reported to the EvM.
#include <catch2/catch.hpp>

#include <cstdint>
#include <map>
#include <utility>
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
  std::vector<PieceHeader> pieces;  // in the order received

  // Every event of first..first+count-1 once, in order, each super-fragment whole: its pieces follow on from
  // each other (nothing lost, nothing twice) and add up to its size.
  bool whole_and_in_order(std::uint64_t first, std::uint32_t count) const {
    std::uint64_t event = first;
    std::uint64_t next_offset = 0;
    for (const PieceHeader& p : pieces) {
      if (p.event != event || p.offset != next_offset) return false;
      next_offset += p.size;
      if (next_offset == p.superfragment_size) {
        ++event;
        next_offset = 0;
      }
    }
    return event == first + count && next_offset == 0;
  }
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
      r.pieces.push_back(piece);
      in.take(piece.size);
      in.align_to(kPieceAlignment);
      if (piece.offset == 0) ++r.fragments;
    }
  });
}

// The RU, enabled and in the EvM's run kRun.
struct RunningRu {
  test::RecordingContext context;
  ru::RU ru{context};
  std::map<Tid, Received> received;

  explicit RunningRu(ParamSet params = test::ru_params(kEvm)) : context(kRu, "evb::RU", std::move(params)) {
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
  // Every batch send that failed is a lost connection, counted and reported (the EvM drops the BU at the first
  // report); every block of it that failed is a send error.
  const double lost = test::metric(r.ru, "lost_connections");
  CHECK(lost > 0);
  // Each frame refused with an error is dropped and the rest of the batch tried, as their own sends would be:
  // a failed batch send of n blocks makes calls of n, n - 1, ... 1 frames, none taken.
  std::size_t failed_sends = 0;
  for (const test::RecordingContext::BatchCall& call : r.context.batch_calls()) {
    if (call.target != kBu) continue;
    CHECK(call.sent == 0);
    if (call.frames == 1) ++failed_sends;
  }
  CHECK(static_cast<double>(failed_sends) == lost);
  CHECK(test::metric(r.ru, "send_errors") == test::metric(r.ru, "blocks_sent") - r.received[kOtherBu].blocks);
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
  pump.configure(source, 65536, readout::kDefaultBlocksPerSend);
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

namespace {

// Super-fragments of about 13 KB in blocks of 4 KiB: each event spans four blocks.
ParamSet multi_block_params(std::size_t blocks_per_send) {
  ParamSet p = test::ru_params(kEvm);
  test::set(p, "fragmentSize", "6500");
  test::set(p, "blockSize", "4096");
  test::set(p, "blocksPerSend", std::to_string(blocks_per_send));
  return p;
}

std::vector<test::RecordingContext::BatchCall> calls_to(test::RecordingContext& context, Tid target) {
  std::vector<test::RecordingContext::BatchCall> out;
  for (const test::RecordingContext::BatchCall& call : context.batch_calls())
    if (call.target == target) out.push_back(call);
  return out;
}

}  // namespace

TEST_CASE("RU: a super-fragment of several blocks goes to its BU in one batch send, whole and in order", "[ru][batch]") {
  RunningRu r(multi_block_params(16));
  r.allocate({{kBu, kGeneration, 0, 1, 1}});
  const std::vector<test::RecordingContext::BatchCall> calls = calls_to(r.context, kBu);
  REQUIRE(r.received[kBu].blocks >= 4);
  REQUIRE(calls.size() == 1);
  CHECK(calls[0].frames == r.received[kBu].blocks);
  CHECK(calls[0].sent == calls[0].frames);
  CHECK(r.received[kBu].whole_and_in_order(1, 1));
  CHECK(r.received[kBu].last_of_batch == 1);
  CHECK(test::metric(r.ru, "blocks_sent") == static_cast<double>(r.received[kBu].blocks));
}

TEST_CASE("RU: blocksPerSend bounds a batch send, and the blocks are the same whatever it is", "[ru][batch]") {
  constexpr std::uint32_t kEvents = 10;  // 40-odd blocks
  RunningRu one(multi_block_params(1));
  RunningRu many(multi_block_params(8));
  one.allocate({{kBu, kGeneration, 0, kEvents, 1}});
  many.allocate({{kBu, kGeneration, 0, kEvents, 1}});
  const std::uint64_t blocks = many.received[kBu].blocks;
  CHECK(one.received[kBu].blocks == blocks);
  CHECK(calls_to(one.context, kBu).size() == blocks);
  const std::vector<test::RecordingContext::BatchCall> calls = calls_to(many.context, kBu);
  CHECK(calls.size() == (blocks + 7) / 8);
  for (const test::RecordingContext::BatchCall& call : calls) CHECK(call.frames <= 8);
  CHECK(many.received[kBu].whole_and_in_order(1, kEvents));
  CHECK(one.received[kBu].whole_and_in_order(1, kEvents));
  CHECK(test::metric(many.ru, "fragments_sent") == kEvents);
}

TEST_CASE("RU: a BU that cannot take the rest of a batch gets it when it has room again, in order, none lost or "
          "sent twice, and the other BUs are not held up",
          "[ru][batch]") {
  RunningRu r(multi_block_params(16));
  r.context.room(kBu, 2);  // takes two blocks of the first batch, then would block
  constexpr std::uint32_t kEvents = 3;
  r.allocate({{kBu, kGeneration, 0, kEvents, 1}, {kOtherBu, kGeneration, 1, 2, kEvents + 1}});
  CHECK(r.received[kBu].blocks == 2);
  CHECK(test::metric(r.ru, "sends_deferred") == 1);
  const double waiting = test::metric(r.ru, "blocks_waiting");
  CHECK(waiting > 0);
  CHECK(r.received[kOtherBu].whole_and_in_order(kEvents + 1, 2));
  r.context.send_ready();  // still no room: nothing moves, nothing is lost
  CHECK(r.received[kBu].blocks == 2);
  r.context.unlimited_room(kBu);
  r.context.send_ready();
  CHECK(static_cast<double>(r.received[kBu].blocks) == 2 + waiting);
  CHECK(r.received[kBu].whole_and_in_order(1, kEvents));
  CHECK(r.received[kBu].last_of_batch == 1);
  CHECK(test::metric(r.ru, "fragments_sent") == kEvents + 2);
  CHECK(test::metric(r.ru, "fragments_in_flight") == 0);
  CHECK(test::metric(r.ru, "send_errors") == 0);
  CHECK(test::metric(r.ru, "blocks_waiting") == 0);
  CHECK(r.context.failures().empty());
}
