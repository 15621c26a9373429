// The EvM's event numbering as a specification: events numbered without gaps, and as many as maxEvents and the
// trigger rate allow.
#include <catch2/catch.hpp>

#include <cstdint>
#include <limits>

#include "evm/event_assigner.hpp"

using namespace daqx::evb;
using namespace daqx::evb::evm;

TEST_CASE("events are numbered from 1 without gaps, again from 1 in a new run", "[event_assigner]") {
  EventAssigner assigner;
  CHECK(assigner.take(8) == 1);
  CHECK(assigner.take(3) == 9);
  CHECK(assigner.next_event() == 12);
  assigner.start_run();
  CHECK(assigner.take(1) == 1);
}

TEST_CASE("maxEvents and the trigger rate bound the events available", "[event_assigner]") {
  EventAssigner assigner;
  CHECK(assigner.events_available({}, 0) == UINT64_MAX);
  CHECK(assigner.events_available({10, 0}, 0) == 10);
  assigner.take(8);
  CHECK(assigner.events_available({10, 0}, 0) == 2);
  assigner.take(2);
  CHECK(assigner.events_available({10, 0}, 0) == 0);
  assigner.start_run();
  CHECK(assigner.events_available({0, 100}, 0.5) == 50);
  assigner.take(50);
  CHECK(assigner.events_available({0, 100}, 0.5) == 0);
}

TEST_CASE("the oldest event not numbered yet has waited since the trigger made it, and forever without a trigger rate",
          "[event_assigner]") {
  EventAssigner assigner;
  const EventAssigner::Limits rate{0, 100};  // event k exists from k / 100 s
  CHECK(assigner.oldest_waiting(rate, 0.005) < 0);  // event 1 comes at 0.01 s
  CHECK(assigner.oldest_waiting(rate, 0.25) == Approx(0.24));
  assigner.take(20);  // events 1-20: event 21 exists from 0.21 s
  CHECK(assigner.oldest_waiting(rate, 0.25) == Approx(0.04));
  CHECK(assigner.events_available(rate, 0.25) == 5);
  assigner.take(5);  // all that exist: the next comes at 0.26 s
  CHECK(assigner.oldest_waiting(rate, 0.25) < 0);
  CHECK(assigner.oldest_waiting({}, 0) == std::numeric_limits<double>::infinity());
  CHECK(assigner.oldest_waiting({10, 0}, 0) == std::numeric_limits<double>::infinity());
}
