// The event builder proper: pieces of super-fragments taken from the blocks the EvM and the RUs send (held, not
// copied), events built once every contributor that is not down gave its super-fragment (incomplete when an
// RU is down), each checked and timed.
#include "bu/bu.hpp"
#include "daqx/apps/text.hpp"
#include "superfragment_check.hpp"

namespace daqx::evb {
using apps::concatenate;
using apps::to_text;

namespace {
constexpr std::uint32_t kMaxProblemsLogged = 20;  // the first integrity problems go to the log; all are counted
}

void BU::start_building(BuilderSlot& s, const BlockHeader& h) {
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
    e.built = false;
    e.flags = 0;
    e.contributions.resize(contributors_.size());
    for (Contribution& c : e.contributions) {
      c.size = 0;
      c.received = 0;
      c.done = false;
      c.pieces.clear();
    }
  }
}

void BU::on_fragments(Frame&& frame) {
  if (!running_) return;
  const int contributor = contributor_index(frame.header.initiator);
  const std::size_t payload = frame.payload_size();
  if (contributor < 0 || payload != frame.payload_size_in_head() || payload < kBlockHeaderBytes) {
    bump(malformed_);
    return;
  }
  if (contributor == 0) evm_.heard(Clock::now());
  ByteReader in(frame.payload(), payload);
  const BlockHeader h = decode_block_header(in);
  if (!evm_.current(h.run, h.generation)) {
    bump(stale_blocks_);  // for a run or generation we left (the EvM dropped or reset us): counted lost there
    return;
  }
  if (h.slot >= slots_.size() || h.batch_count == 0) {
    bump(protocol_errors_);
    return;
  }
  BuilderSlot& s = slots_[h.slot];
  if (s.state == BuilderSlot::State::offered && h.batch_first_event <= s.finished_first) {
    bump(stale_blocks_);  // a late block of a batch this slot already finished (event ids only grow in a run)
    return;
  }
  if (s.state == BuilderSlot::State::offered) {
    start_building(s, h);
  } else if (s.state != BuilderSlot::State::building || s.first_event != h.batch_first_event || s.count != h.batch_count) {
    bump(protocol_errors_);  // a batch for a slot we did not offer, or two batches in one slot
    return;
  }
  bump(blocks_received_);
  const auto c = static_cast<std::size_t>(contributor);
  const std::uint32_t slot_index = h.slot;
  s.blocks.push_back(std::move(frame.data));  // the pieces below point into it: held until the slot is done
  for (std::uint32_t p = 0; p < h.piece_count; ++p) {
    const PieceHeader ph = decode_piece_header(in);
    const std::byte* data = in.take(ph.size);
    in.align_to(kPieceAlignment);
    if (!in.ok() || ph.event < s.first_event || ph.event - s.first_event >= s.count) {
      bump(protocol_errors_);
      break;
    }
    const auto index = static_cast<std::uint32_t>(ph.event - s.first_event);
    EventUnderConstruction& e = s.events[index];
    Contribution& part = e.contributions[c];
    if (part.done || e.built) {
      bump(duplicate_pieces_);  // a second super-fragment from this contributor for this event
      continue;
    }
    if (ph.offset != part.received || (part.received != 0 && ph.superfragment_size != part.size) ||
        ph.offset + ph.size > ph.superfragment_size) {
      bump(protocol_errors_);
      continue;
    }
    part.size = ph.superfragment_size;
    part.pieces.emplace_back(data, ph.size);
    part.received += ph.size;
    if (part.received == part.size) {
      part.done = true;
      ++e.contributions_done;
      bump(fragments_received_);
      try_build(s, index);
      if (slots_[slot_index].state != BuilderSlot::State::building) break;  // the slot is complete (and maybe reused)
    }
  }
}

// Builds event `index` of the slot if every contributor that is not down has given its super-fragment.
void BU::try_build(BuilderSlot& s, std::uint32_t index) {
  EventUnderConstruction& e = s.events[index];
  if (e.built) return;
  std::uint32_t missing_down = 0;
  for (std::size_t c = 0; c < e.contributions.size(); ++c)
    if (!e.contributions[c].done) {
      if (!contributor_down_[c]) return;
      ++missing_down;
    }
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
        context().log(LogLevel::error, concatenate({"event ", to_text(s.first_event + index), " from contributor ",
                                                    to_text(std::uint64_t{contributors_[c]}), ": ", check.problem}));
    }
  }
  if (missing_down != 0) e.flags |= event_flags::incomplete;
  if (e.flags & event_flags::incomplete) {
    ++s.incomplete;
    bump(events_incomplete_);
  }
  if (e.flags & event_flags::corrupt) {
    ++s.corrupt;
    bump(events_corrupt_);
  }
  bump(events_built_);
  bump(bytes_built_, bytes);
  const Clock::duration latency = Clock::now() - s.first_data;
  build_latency_.record(std::chrono::duration_cast<std::chrono::nanoseconds>(latency));
  latencies_.push_back(std::chrono::duration<double, std::micro>(latency).count());
  if (++s.built == s.count) slot_built(static_cast<std::uint32_t>(&s - slots_.data()));
}

}  // namespace daqx::evb
