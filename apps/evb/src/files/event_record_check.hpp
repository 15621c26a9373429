// Checking an event record's fragments as test-mode super-fragments (docs/evb-protocol.md, "Super-fragment
// format"): what daqx-evb-dump --verify does for a file's records and evb::Monitor for the events a BU streams.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "files/event_file_reader.hpp"

namespace daqx::evb {

struct RecordVerdict {
  std::uint64_t checked = 0;  // fragments checked
  std::uint64_t failed = 0;   // fragments that failed the check
  // The record is flagged corrupt: its BU found the failures too and said so, so the record holds what was built,
  // faithfully; a reader counts these apart.
  bool flagged = false;
  // One line per failed fragment, "event 7 contributor 100: PROBLEM", with " (flagged corrupt)" when flagged.
  std::vector<std::string> problems;

  bool ok() const noexcept { return failed == 0; }
};

// Checks every fragment of `record` (headers, sizes, CRC-32C) for the record's event and its contributor.
RecordVerdict verify_event_record(const EventFileRecord& record);

}  // namespace daqx::evb
