// Which counters say how much an application moves: one list for every view of a running partition (the
// executive's pages, the partition dashboard, daqx-launch's table and summary, daqxctl watch), so that they all
// show the same figure for the same application.
#pragma once

#include <array>

namespace daqx {

struct HeadlineCounter {
  const char* name;  // the application's counter (a metric without labels)
  const char* word;  // what it counts, for tables: "events", "frames", ...
};

// In order of preference, the first one an application reports is its headline: built events for a BU,
// completed ones for the EvM, events from a stream for a Monitor, super-fragments for an RU (one per event),
// frames, round trips and echoes for the test applications.
inline constexpr std::array<HeadlineCounter, 8> kHeadlineItemCounters{{
    {"events_built", "events"},
    {"events_completed", "events"},
    {"events_received", "events"},
    {"fragments_sent", "fragments"},
    {"frames_received", "frames"},
    {"frames_sent", "frames"},
    {"round_trips", "round trips"},
    {"echoes", "echoes"},
}};

// The same for bytes: built, sent or received payload. The EvM's trigger bytes are not among them: it moves
// no event data, and its few bytes of trigger information beside the RUs' and BUs' figures would only mislead.
inline constexpr std::array<const char*, 3> kHeadlineByteCounters{"bytes_built", "bytes_sent", "bytes_received"};

// The counter's name in either list, so that one loop walks both.
constexpr const char* counter_name(const HeadlineCounter& counter) { return counter.name; }
constexpr const char* counter_name(const char* counter) { return counter; }

}  // namespace daqx
