// The event record (docs/evb-files.md) of one built event of a slot, as a view of the pieces the slot holds: what
// the file output writes and the BU's stream of events sends, made in one place.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "bu/slot_table.hpp"
#include "daqx/api/frame.hpp"
#include "files/event_file_format.hpp"

namespace daqx::evb::bu {

// The pieces of one record's fragments, reused from event to event so that a record allocates nothing once
// they have grown to the largest event.
struct RecordPieces {
  std::vector<EventRecordView::Fragment> fragments;
  std::vector<std::span<const std::byte>> spans;
};

// Event `event` (0 .. slot.count - 1) of a built slot: only whole super-fragments (a down RU's part of one is not
// in the record), in contributor order (contributors: the EvM, then the RUs, as the slot's contributions are
// indexed). The view points into `pieces` and the slot's blocks.
EventRecordView built_event_record(const BuilderSlot& slot, std::uint32_t event, const std::vector<Tid>& contributors,
                                   RecordPieces& pieces);

}  // namespace daqx::evb::bu
