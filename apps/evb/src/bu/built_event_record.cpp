// built_event_record (built_event_record.hpp).
#include "bu/built_event_record.hpp"

namespace daqx::evb::bu {

EventRecordView built_event_record(const BuilderSlot& s, std::uint32_t i, const std::vector<Tid>& contributors,
                                   RecordPieces& pieces) {
  const EventUnderConstruction& e = s.events[i];
  pieces.fragments.clear();
  pieces.spans.clear();
  for (const Contribution& part : e.contributions)
    if (part.done) pieces.spans.insert(pieces.spans.end(), part.pieces.begin(), part.pieces.end());
  std::size_t at = 0;
  for (std::size_t c = 0; c < e.contributions.size(); ++c) {
    const Contribution& part = e.contributions[c];
    if (!part.done) continue;
    pieces.fragments.push_back({contributors[c], part.size, std::span(pieces.spans).subspan(at, part.pieces.size())});
    at += part.pieces.size();
  }
  EventRecordView view;
  view.run = s.run;
  view.event = s.first_event + i;
  view.flags = e.flags;
  view.fragments = pieces.fragments;
  return view;
}

}  // namespace daqx::evb::bu
