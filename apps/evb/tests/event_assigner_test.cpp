// The EvM's event numbering as a specification: events numbered without gaps, and as many as maxEvents and the
// trigger rate allow.
#include <catch2/catch.hpp>

#include <cstdint>

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
