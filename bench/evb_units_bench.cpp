// Event-builder units benchmark: what the EvM's assignment costs per batch and the BU's assembly per event and
// per super-fragment, at 8, 64 and 512 RUs x BUs, with the real EvM and BU in one process and fake peers (the
// in-process tests' recording context): no transport, so only the units' own work is timed. Prints a table and
// writes CSV; bench/evb_units_plot.py draws it. A benchmark, never a test.
//   daqx-bench-evb-units [--repeat N] [--csv FILE] [--units 8,64,512]
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "bu/bu.hpp"
#include "daqx/services/number_text.hpp"
#include "evm/evm.hpp"
#include "contributor_peers.hpp"
#include "recording_context.hpp"
#include "unit_fixtures.hpp"

namespace {

using namespace daqx;
using namespace daqx::evb;
using namespace daqx::evb::bu;
using namespace daqx::evb::evm;
using namespace daqx::evb::readout;
using Clock = std::chrono::steady_clock;

constexpr Tid kEvm = 10;
constexpr Tid kFirstRu = 1000;
constexpr Tid kFirstBu = 3000;
constexpr std::uint32_t kRun = 1;
constexpr std::uint32_t kEventsPerBatch = 8;
constexpr std::uint32_t kSlots = 4;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// ---- EvM: N RUs report, N BUs ask in rounds (each gives back its batches and offers kSlots slots) ----
double evm_us_per_batch(std::size_t units, std::size_t rounds) {
  const std::vector<Tid> bus = test::tids(kFirstBu, units), rus = test::tids(kFirstRu, units);
  test::RecordingContext context(kEvm, "evb::EvM", test::evm_params(bus, rus, kEventsPerBatch, 0), std::size_t{1} << 30);
  EvM evm(context);
  // What a peer does with the frames is not the EvM's cost: the BUs keep their batches' ids, the rest is let go.
  std::map<Tid, std::vector<Discard>> held;
  context.watch(function::allocate, [](Tid, const mem::Ref&) {});
  context.watch(function::fragments, [&held](Tid bu, const mem::Ref& frame) {
    ByteReader in(frame.data() + kFrameHeaderSize, frame.size() - kFrameHeaderSize);
    const BlockHeader h = decode_block_header(in);
    if (h.flags & block_flags::last_of_batch) held[bu].push_back({h.batch_first_event, h.batch_count, h.slot, 0, 0});
  });
  evm.configure();
  evm.enable();
  for (std::size_t r = 0; r < units; ++r)
    context.deliver(function::ru_status, rus[r], test::ru_status_payload({kRun, r + 1, 0, 0}));
  auto request = [&](std::size_t b, std::uint32_t generation, std::uint32_t offer, std::vector<Discard> discards) {
    Request q;
    q.run = kRun;
    q.generation = generation;
    q.incarnation = b + 1;
    q.priority = 255;
    q.total_slots = kSlots;
    for (std::uint32_t s = 0; s < offer; ++s) q.free_slots.push_back(s);
    q.discards = std::move(discards);
    return test::request_payload(q);
  };
  for (std::size_t b = 0; b < units; ++b) context.deliver(function::request, bus[b], request(b, 0, 0, {}));
  std::map<Tid, std::uint32_t> generation;
  for (auto& s : context.sent())
    if (auto c = decode_control(s.frame.data() + kFrameHeaderSize, s.frame.size() - kFrameHeaderSize);
        c && c->kind == ControlKind::reset)
      generation[s.target] = c->generation;
  context.sent().clear();

  double seconds = 0;
  std::uint64_t batches = 0;
  for (std::size_t round = 0; round < rounds + 1; ++round) {
    std::vector<std::vector<std::byte>> requests(units);  // made before the clock starts: the BUs' work
    for (std::size_t b = 0; b < units; ++b) requests[b] = request(b, generation[bus[b]], kSlots, std::move(held[bus[b]]));
    held.clear();
    const double assigned_before = test::metric(evm, "events_assigned");
    const auto start = Clock::now();
    context.run_round([&] {
      for (std::size_t b = 0; b < units; ++b) context.deliver(function::request, bus[b], requests[b]);
    });
    const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
    context.sent().clear();
    if (round == 0) continue;  // the first round warms the pools and the log
    seconds += elapsed;
    batches += static_cast<std::uint64_t>((test::metric(evm, "events_assigned") - assigned_before) / kEventsPerBatch);
  }
  evm.halt();
  return seconds * 1e6 / static_cast<double>(batches);
}

// ---- BU: N RUs and the EvM send every batch; the blocks are made before the clock starts ----
struct AssemblyCost {
  double us_per_event;
  double ns_per_fragment;
};

AssemblyCost bu_assembly(std::size_t units, std::uint64_t events) {
  constexpr Tid kBu = kFirstBu;
  constexpr std::uint32_t generation = (kRun << 16) | 1;
  std::vector<Tid> contributors{kEvm};
  for (Tid t : test::tids(kFirstRu, units)) contributors.push_back(t);
  test::RecordingContext bu_side(kBu, "evb::BU",
                                 test::bu_params(kEvm, {contributors.begin() + 1, contributors.end()}, 16));
  BU bu(bu_side);
  test::ContributorPeers peers(contributors, kRun, test::small_shape(), std::size_t{1} << 30);
  bu.configure();
  bu.enable();
  bu_side.deliver(function::control, kEvm, test::control_payload({ControlKind::heartbeat, kRun, 0, kNoTid, {}}));
  bu_side.deliver(function::control, kEvm, test::control_payload({ControlKind::reset, kRun, generation, kBu, {}}));

  std::vector<std::uint32_t> free_slots;
  auto take_offers = [&] {
    for (auto& s : bu_side.sent())
      if (auto r = decode_request(s.frame.data() + kFrameHeaderSize, s.frame.size() - kFrameHeaderSize))
        free_slots.insert(free_slots.end(), r->free_slots.begin(), r->free_slots.end());
    bu_side.sent().clear();
  };
  take_offers();
  double seconds = 0;
  std::uint64_t built = 0, next_event = 1;
  std::vector<std::pair<Tid, mem::Ref>> blocks;
  const std::uint64_t warm = events / 10;
  while (next_event <= events + warm && !free_slots.empty()) {
    const std::uint32_t slot = free_slots.back();
    free_slots.pop_back();
    const Assignment a{kBu, generation, slot, kEventsPerBatch, next_event};
    next_event += kEventsPerBatch;
    blocks.clear();
    for (std::size_t c = 0; c < contributors.size(); ++c)  // the peers' work, not timed
      for (mem::Ref& block : peers.blocks(c, a)) blocks.emplace_back(contributors[c], std::move(block));
    const auto start = Clock::now();
    for (auto& [from, frame] : blocks) bu_side.deliver(function::fragments, from, std::move(frame));
    const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
    if (a.first_event > warm) {
      seconds += elapsed;
      built += kEventsPerBatch;
    }
    take_offers();
  }
  bu.halt();
  const double per_event = seconds / static_cast<double>(built);
  return {per_event * 1e6, per_event * 1e9 / static_cast<double>(contributors.size())};
}

}  // namespace

// An option's number by daqx's strict syntax (daqx/services/number_text.hpp).
template <typename Number>
Number read_number(const std::string& option, const daqx::numbers::Parsed<Number>& parsed) {
  if (!parsed) {
    std::fprintf(stderr, "%s: %s\n", option.c_str(), parsed.error.c_str());
    std::exit(2);
  }
  return *parsed;
}

int main(int argc, char** argv) {
  int repeat = 1;
  std::string csv_path = "evb_units_bench.csv";
  std::vector<std::size_t> unit_counts{8, 64, 512};
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--repeat" && i + 1 < argc) repeat = read_number(arg, daqx::numbers::parse<int>(argv[++i], 1));
    else if (arg == "--csv" && i + 1 < argc) csv_path = argv[++i];
    else if (arg == "--units" && i + 1 < argc) {
      unit_counts.clear();
      std::string list = argv[++i];
      for (std::size_t at = 0; at < list.size();) {
        const std::size_t comma = std::min(list.find(',', at), list.size());
        unit_counts.push_back(read_number(arg, daqx::numbers::parse<std::size_t>(list.substr(at, comma - at), 1)));
        at = comma + 1;
      }
    } else {
      std::fprintf(stderr, "usage: %s [--repeat N] [--csv FILE] [--units 8,64,512]\n", argv[0]);
      return 2;
    }
  }
  struct Row {
    std::size_t units;
    double us_per_batch, batches_per_second, us_per_event, ns_per_fragment;
  };
  std::vector<Row> rows;
  for (std::size_t n : unit_counts) {
    std::vector<double> batch, event, fragment;
    // Enough work per point for tenths of a second whatever n: fewer rounds and events as units grow.
    const std::size_t rounds = std::max<std::size_t>(4, 20000 / (n * kSlots));
    const std::uint64_t events = std::max<std::uint64_t>(800, (std::uint64_t{1} << 21) / (n + 1)) / kEventsPerBatch *
                                 kEventsPerBatch;
    for (int r = 0; r < repeat; ++r) {
      batch.push_back(evm_us_per_batch(n, rounds));
      const AssemblyCost cost = bu_assembly(n, events);
      event.push_back(cost.us_per_event);
      fragment.push_back(cost.ns_per_fragment);
    }
    const double b = median(batch);
    rows.push_back({n, b, 1e6 / b, median(event), median(fragment)});
  }
  std::printf("event-builder units, one process, fake peers (median of %d)\n", repeat);
  std::printf("%8s  %16s  %14s  %16s  %18s  %12s\n", "RUs=BUs", "EvM us/batch", "EvM batches/s", "BU us/event",
              "BU ns/fragment", "vs first");
  for (const Row& row : rows)
    std::printf("%8zu  %16.3f  %14.0f  %16.3f  %18.1f  %11.2fx\n", row.units, row.us_per_batch,
                row.batches_per_second, row.us_per_event, row.ns_per_fragment,
                row.ns_per_fragment / rows.front().ns_per_fragment);
  std::ofstream csv(csv_path);
  csv << "units,evm_us_per_batch,evm_batches_per_second,bu_us_per_event,bu_ns_per_fragment\n";
  for (const Row& row : rows)
    csv << row.units << ',' << row.us_per_batch << ',' << row.batches_per_second << ',' << row.us_per_event << ','
        << row.ns_per_fragment << '\n';
  std::printf("CSV: %s\n", csv_path.c_str());
  return 0;
}
