// evb::bu::EventAssembly (event_assembly.hpp): contributions to events, and the checks.
#include "bu/event_assembly.hpp"

#include "daqx/apps/latency.hpp"
#include "daqx/evb/consumer.hpp"
#include "daqx/apps/text.hpp"
#include "format/superfragment_check.hpp"

namespace daqx::evb::bu {
using apps::concatenate;
using apps::to_text;

namespace {
constexpr std::uint32_t kMaxProblemsLogged = 20;  // the first integrity problems go to the log; all are counted
}

void EventAssembly::start_building(BuilderSlot& s, const BlockHeader& h) {
  s.state = BuilderSlot::State::building;
  s.first_event = h.batch_first_event;
  s.count = h.batch_count;
  s.built = 0;
  s.incomplete = 0;
  s.corrupt = 0;
  s.first_data = Clock::now();
  if (s.events.size() < s.count) s.events.resize(s.count);
  for (std::uint32_t i = 0; i < s.count; ++i) {
    EventUnderConstruction& e = s.events[i];
    e.contributions_done = 0;
    e.awaited = contributors_up_;
    e.built = false;
    e.flags = 0;
    e.contributions.resize(contributors_.size());
    for (Contribution& c : e.contributions) {
      c.size = 0;
      c.received = 0;
      c.done = false;
      c.pieces.clear();
      c.piece_blocks.clear();
    }
  }
}

std::size_t EventAssembly::take_blocks(std::size_t contributor, std::span<Frame> frames) {
  Received received;
  std::size_t malformed = 0;
  for (Frame& frame : frames) {
    const std::size_t payload = frame.payload_size();
    if (payload != frame.payload_size_in_head() || payload < kBlockHeaderBytes) {
      ++malformed;
      continue;
    }
    take_one(contributor, frame, received);
  }
  if (received.blocks != 0) counts_.blocks_received.add_single_writer(received.blocks);
  if (received.fragments != 0) counts_.fragments_received.add_single_writer(received.fragments);
  return malformed;
}

void EventAssembly::take_one(std::size_t contributor, Frame& frame, Received& received) {
  const std::size_t payload = frame.payload_size();
  ByteReader in(frame.payload(), payload);
  const BlockHeader h = decode_block_header(in);
  if (!evm_.current(h.run, h.generation)) {
    counts_.stale_blocks.add_single_writer();  // for a run or generation we left (the EvM dropped or reset us): counted lost there
    return;
  }
  if (!slots_.contains(h.slot) || h.batch_count == 0) {
    counts_.protocol_errors.add_single_writer();
    return;
  }
  BuilderSlot& s = slots_.slot(h.slot);
  if (s.state == BuilderSlot::State::offered && h.batch_first_event <= s.finished_first) {
    counts_.stale_blocks.add_single_writer();  // a late block of a batch this slot already finished (event ids only grow in a run)
    return;
  }
  if (s.state == BuilderSlot::State::offered) {
    start_building(s, h);
  } else if (s.state != BuilderSlot::State::building || s.first_event != h.batch_first_event || s.count != h.batch_count) {
    counts_.protocol_errors.add_single_writer();  // a batch for a slot we did not offer, or two batches in one slot
    return;
  }
  ++received.blocks;
  const std::size_t c = contributor;
  const std::uint32_t slot_index = h.slot;
  const auto block = static_cast<std::uint32_t>(s.blocks.size());
  s.blocks.push_back(std::move(frame.data));  // the pieces below point into it: held until the slot is done
  for (std::uint32_t p = 0; p < h.piece_count; ++p) {
    const PieceHeader ph = decode_piece_header(in);
    const std::byte* data = in.take(ph.size);
    in.align_to(kPieceAlignment);
    if (!in.ok() || ph.event < s.first_event || ph.event - s.first_event >= s.count) {
      counts_.protocol_errors.add_single_writer();
      break;
    }
    const auto index = static_cast<std::uint32_t>(ph.event - s.first_event);
    EventUnderConstruction& e = s.events[index];
    Contribution& part = e.contributions[c];
    if (part.done || e.built) {
      counts_.duplicate_pieces.add_single_writer();  // a second super-fragment from this contributor for this event
      continue;
    }
    if (ph.offset != part.received || (part.received != 0 && ph.superfragment_size != part.size) ||
        ph.offset + ph.size > ph.superfragment_size) {
      counts_.protocol_errors.add_single_writer();
      continue;
    }
    part.size = ph.superfragment_size;
    part.pieces.emplace_back(data, ph.size);
    part.piece_blocks.push_back(block);
    part.received += ph.size;
    if (part.received == part.size) {
      part.done = true;
      ++e.contributions_done;
      ++received.fragments;
      // A down contributor's late super-fragment is taken but was not awaited.
      if (!contributor_down_[c]) --e.awaited;
      if (e.awaited == 0) {
        build(s, index);
        if (slots_.slot(slot_index).state != BuilderSlot::State::building) break;  // the slot is complete (maybe reused)
      }
    }
  }
}

// Builds event `index` of the slot: every contributor that is not down has given its super-fragment (awaited
// is 0). The one pass over the contributions checks each of them, once per event.
void EventAssembly::build(BuilderSlot& s, std::uint32_t index) {
  EventUnderConstruction& e = s.events[index];
  e.built = true;
  std::uint64_t bytes = 0;
  for (std::size_t c = 0; c < e.contributions.size(); ++c) {
    const Contribution& part = e.contributions[c];
    bytes += part.received;
    if (!part.done || !config_.check_data) continue;
    const FragmentCheck check = verify_superfragment(part.pieces, s.first_event + index, contributors_[c], true);
    if (!check.ok) {
      e.flags |= event_flags::corrupt;
      if (problems_logged_++ < kMaxProblemsLogged)
        context_.log(LogLevel::error, concatenate({"event ", to_text(s.first_event + index), " from contributor ",
                                                    to_text(std::uint64_t{contributors_[c]}), ": ", check.problem}));
    }
  }
  if (e.contributions_done != e.contributions.size()) e.flags |= event_flags::incomplete;  // only down ones missing
  if (e.flags & event_flags::incomplete) {
    ++s.incomplete;
    counts_.events_incomplete.add_single_writer();
  }
  if (e.flags & event_flags::corrupt) {
    ++s.corrupt;
    counts_.events_corrupt.add_single_writer();
  }
  counts_.events_built.add_single_writer();
  counts_.bytes_built.add_single_writer(bytes);
  const Clock::duration latency = Clock::now() - s.first_data;
  build_latency_.record(std::chrono::duration_cast<std::chrono::nanoseconds>(latency));
  latencies_.push_back(std::chrono::duration<double, std::micro>(latency).count());
  if (++s.built == s.count) built_(slots_.index_of(s));
}

void EventAssembly::start() {
  new_run();
  counts_.reset();
  build_latency_.reset();
  problems_logged_ = 0;
}

void EventAssembly::new_run() {
  contributor_down_.assign(contributors_.size(), false);
  contributors_up_ = static_cast<std::uint32_t>(contributors_.size());
}

// Once per contributor and run (the EvM repeats the news to BUs it takes in again): every event in flight that
// still awaits its super-fragment awaits one fewer.
void EventAssembly::contributor_down(std::size_t contributor) {
  if (contributor >= contributor_down_.size() || contributor_down_[contributor]) return;
  contributor_down_[contributor] = true;
  --contributors_up_;
  slots_.for_each_building([&](BuilderSlot& s) {
    for (std::uint32_t i = 0; i < s.count && s.state == BuilderSlot::State::building; ++i) {
      EventUnderConstruction& e = s.events[i];
      if (e.built || e.contributions[contributor].done) continue;
      if (--e.awaited == 0) build(s, i);
    }
  });
}

void EventAssembly::summarize_latencies(Clock::time_point now) {
  if (now - latency_published_ >= std::chrono::seconds(1) && !latencies_.empty()) {
    const apps::LatencySummary summary = apps::summarize_latencies(latencies_);
    latency_median_us_.store(summary.median, std::memory_order_relaxed);
    latency_p99_us_.store(summary.p99, std::memory_order_relaxed);
    latencies_.clear();
    latency_published_ = now;
  }
  if (latencies_.size() > 100000) latencies_.erase(latencies_.begin(), latencies_.begin() + 50000);
}

}  // namespace daqx::evb::bu
