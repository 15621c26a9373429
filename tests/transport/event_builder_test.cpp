// Transport suite, event building: an EvM, RUs and BUs, each its own executive, build verified events over the
// transport of the run; units killed (SIGKILL) or stalled (SIGSTOP) mid-run are handled as the failure policy
// says, and the counters add up (built + lost = assigned, nothing built twice). Named by topology and fault.
#include <catch2/catch.hpp>

#include <signal.h>

#include <thread>

#include "../support/evb_run.hpp"
#include "suite.hpp"

using namespace daqx::test;
using Catch::Contains;
using Clock = std::chrono::steady_clock;

namespace {

// When the EvM's count of live BUs reached `alive`, seen from here: between the start of the last poll that
// still saw more (at_least) and the answer of the first that saw it (at_most), in seconds since `since`. A
// poll of an executive in an emulated guest on a loaded machine takes a good part of a second: at_least is
// what the drop's promptness is judged by, so that only a drop that was certainly late fails.
struct DropSeen {
  bool seen = false;
  double at_least = 0;
  double at_most = 0;
};

DropSeen wait_for_drop(EvbRun& run, double alive, Clock::time_point since, std::chrono::seconds limit) {
  DropSeen drop;
  Clock::time_point previous_poll = since;
  const Clock::time_point deadline = Clock::now() + limit;
  while (Clock::now() < deadline) {
    const Clock::time_point poll = Clock::now();
    if (run.metric(kEvm, "bus_alive") == alive) {
      drop.seen = true;
      drop.at_least = std::chrono::duration<double>(previous_poll - since).count();
      drop.at_most = std::chrono::duration<double>(Clock::now() - since).count();
      return drop;
    }
    previous_poll = poll;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return drop;
}

}  // namespace


TEST_CASE("2x2 builds every assigned event exactly once and every event passes its checks", "[transport][process][evb]") {
  const TransportProfile& transport = suite_transport();
  // This test is about integrity: a BU timeout of 10 s keeps an emulated guest on a loaded machine, where a
  // heartbeat's round trip can take over a second, from dropping a live BU (the failure tests below cover drops;
  // "BU timeouts far too short" covers false ones).
  const std::uint64_t max_events = transport.work(20000);
  const auto events = static_cast<double>(max_events);
  EvbRun run(transport, "evb-2x2", 2, 2,
             {{"maxEvents", std::to_string(max_events), "unsigned"}, {"buTimeout", "10", ""}},
             {{"fragmentSize", "3000", "unsigned"}, {"fragmentSpread", "2000", "unsigned"}});
  run.start_run();
  // As long as events keep completing: an emulated guest under a sanitizer on a busy machine is slow, not stuck.
  run.require_progress(kEvm, "events_completed", events);
  run.stop_run();
  CHECK(run.metric(kEvm, "events_assigned") == events);
  CHECK(run.metric(kEvm, "events_lost") == 0);
  CHECK(run.metric(kEvm, "unexpected_discards") == 0);
  CHECK(run.sum({bu(0), bu(1)}, "events_built") == events);
  CHECK(run.metric(bu(0), "events_built") > 0);
  CHECK(run.metric(bu(1), "events_built") > 0);
  for (std::uint32_t b : {bu(0), bu(1)}) {
    CHECK(run.metric(b, "events_corrupt") == 0);
    CHECK(run.metric(b, "events_incomplete") == 0);
    CHECK(run.metric(b, "duplicate_pieces") == 0);
    CHECK(run.metric(b, "protocol_errors") == 0);
    CHECK(run.metric(b, "fragments_received") == run.metric(b, "events_built") * 3);  // EvM + 2 RUs
  }
  for (std::uint32_t r : {ru(0), ru(1)}) CHECK(run.metric(r, "fragments_sent") == events);
  // Batches sized in bytes by default: about 2 MiB of whole events, each of two RUs' super-fragments of 8 sources
  // x ~3 KB (~24 KB) and the ~1 KB trigger fragment, so about 42 events, well above the minimum of 8 (the spread
  // of the sizes makes it move a little).
  CHECK(run.metric(kEvm, "events_per_request") >= 30);
  CHECK(run.metric(kEvm, "events_per_request") <= 60);
  // Every block is back in its pool once the run is stopped.
  for (std::uint32_t r : {ru(0), ru(1), kEvm}) CHECK(run.pool_empty(r, "evb/"));
  for (std::uint32_t b : {bu(0), bu(1)}) CHECK(run.receive_pool_at_rest(b));
  run.finish();
}

TEST_CASE("2x2 with a short BU timeout and BUs paused over and over: each pause drops a live BU and its return takes it "
          "in again, and events are lost but never a count, a block or a unit", "[transport][process][evb][failure]") {
  const TransportProfile& transport = suite_transport();
  // A pause (SIGSTOP) longer than the timeout drops a BU that is alive and still holds slots, fragments in flight
  // and requests on their way; when it resumes it asks with its old generation and is reset and taken in again.
  // These races (a drop against requests, fragments and resets of every generation) are what this test is for.
  EvbRun run(transport, "evb-2x2-pauses", 2, 2, {{"buTimeout", "0.2", ""}, {"heartbeatInterval", "0.05", ""}},
             {{"fragmentSize", "3000", "unsigned"}, {"fragmentSpread", "2000", "unsigned"}});
  run.start_run();
  run.require_progress(kEvm, "events_completed", static_cast<double>(transport.work(500)));
  for (int pause = 0; pause < 6; ++pause) {
    const pid_t paused = run.process(bu(pause % 2)).pid();
    ::kill(paused, SIGSTOP);
    std::this_thread::sleep_for(std::chrono::milliseconds(600));
    ::kill(paused, SIGCONT);
    std::this_thread::sleep_for(std::chrono::milliseconds(400));
  }
  // Both BUs build again after their last pause.
  REQUIRE(wait_until([&] { return run.metric(kEvm, "bus_alive") == 2; }, std::chrono::seconds(60)));
  run.require_progress(kEvm, "events_completed",
                       run.metric(kEvm, "events_completed") + static_cast<double>(transport.work(1000)));
  run.stop_run();
  const double assigned = run.metric(kEvm, "events_assigned");
  const double completed = run.metric(kEvm, "events_completed");
  const double lost = run.metric(kEvm, "events_lost");
  INFO("assigned " << assigned << ", completed " << completed << ", lost " << lost << ", drops "
       << run.metric(kEvm, "bu_drops") << ", readmissions " << run.metric(kEvm, "bu_readmissions"));
  CHECK(run.metric(kEvm, "drained") == 1);
  // At least one: on a machine so loaded that the EvM itself is paused as long as a BU, it rightly forgives
  // silence it could not have heard (EvM::tick), and some pauses pass unseen.
  CHECK(run.metric(kEvm, "bu_drops") >= 1);
  CHECK(run.metric(kEvm, "bu_readmissions") >= 1);
  CHECK(completed + lost == assigned);
  CHECK(run.metric(kEvm, "unexpected_discards") == 0);
  for (std::uint32_t b : {bu(0), bu(1)}) {
    CHECK(run.metric(b, "events_corrupt") == 0);
    CHECK(run.metric(b, "duplicate_pieces") == 0);
    CHECK(run.metric(b, "protocol_errors") == 0);
    CHECK(run.receive_pool_at_rest(b));
  }
  for (std::uint32_t r : {ru(0), ru(1), kEvm}) CHECK(run.pool_empty(r, "evb/"));
  for (std::uint32_t t : {ru(0), ru(1), kEvm, bu(0), bu(1)}) CHECK(run.state(t) == "Configured");
  run.finish();  // every executive alive and ending cleanly
}

TEST_CASE("2x2_failBU: a BU killed mid-run is dropped within 2 s, its events counted lost, and the run goes on, "
          "takes it back when it returns and drains cleanly", "[transport][process][evb][failure]") {
  const TransportProfile& transport = suite_transport();
  EvbRun run(transport, "evb-2x2-failbu", 2, 2, {});
  run.start_run();
  run.require_progress(bu(1), "events_built", static_cast<double>(transport.work(2000)));
  run.process(bu(1)).kill_now();
  const DropSeen drop = wait_for_drop(run, 1, Clock::now(), std::chrono::seconds(5));
  REQUIRE(drop.seen);
  INFO("dropped between " << drop.at_least << " s and " << drop.at_most << " s after the kill");
  CHECK(drop.at_least < 2.0);
  CHECK(run.metric(kEvm, "bu_drops") == 1);
  // The survivor keeps building.
  const double built = run.metric(bu(0), "events_built");
  run.require_progress(bu(0), "events_built", built + static_cast<double>(transport.work(5000)));

  // The BU comes back (a new process): configured and enabled, it is taken in again without a new run.
  run.start(bu(1));
  REQUIRE(run.process(bu(1)).wait_ready());
  run.bring_up(bu(1));
  REQUIRE(wait_until([&] { return run.metric(kEvm, "bus_alive") == 2; }, std::chrono::seconds(60)));
  {
    INFO("EvM:\n" << run.process(kEvm).output());
    // At least once: an RU whose connection to the new process is still coming back (reconnection backoff)
    // loses the first blocks it sends there and reports it; the EvM then rightly drops that generation and
    // takes the BU in once more. What matters is that it ends up building (below).
    CHECK(run.metric(kEvm, "bu_readmissions") >= 1);
  }
  const ExecutiveProcess::Progress building = run.process(bu(1)).wait_progress(bu(1), "events_built", static_cast<double>(transport.work(1000)));
  INFO("restarted BU: " << building.trace << "; stale blocks " << run.metric(bu(1), "stale_blocks")
       << ", protocol errors " << run.metric(bu(1), "protocol_errors") << ", resets " << run.metric(bu(1), "resets")
       << "; EvM assigned to it " << run.metric(kEvm, "events_assigned") << ", BUs alive " << run.metric(kEvm, "bus_alive"));
  const std::string units = building.reached ? std::string() : run.picture();
  INFO("every unit when it failed:\n" << units);
  REQUIRE(building.reached);

  run.stop_run();
  CHECK(run.metric(kEvm, "drained") == 1);
  const double assigned = run.metric(kEvm, "events_assigned");
  const double completed = run.metric(kEvm, "events_completed");
  const double lost = run.metric(kEvm, "events_lost");
  INFO("assigned " << assigned << " completed " << completed << " lost " << lost);
  CHECK(lost > 0);
  CHECK(completed + lost == assigned);
  CHECK(run.metric(kEvm, "unexpected_discards") == 0);
  // The survivors built what the EvM counts completed (the first BU's built events died with it).
  CHECK(run.metric(bu(0), "events_built") + run.metric(bu(1), "events_built") <= completed);
  for (std::uint32_t b : {bu(0), bu(1)}) {
    CHECK(run.metric(b, "events_corrupt") == 0);
    CHECK(run.metric(b, "duplicate_pieces") == 0);
  }
  // Survivors hold no block for the dead BU: every pool is back to empty.
  for (std::uint32_t r : {ru(0), ru(1), kEvm}) CHECK(run.pool_empty(r, "evb/"));
  CHECK(run.receive_pool_at_rest(bu(0)));
  for (std::uint32_t t : {ru(0), ru(1), kEvm, bu(0), bu(1)}) CHECK(run.state(t) == "Configured");
  run.finish();
}

TEST_CASE("2x2_failRU: an RU killed mid-run fails the run with the reason on every unit (policy fail)",
          "[transport][process][evb][failure]") {
  const TransportProfile& transport = suite_transport();
  EvbRun run(transport, "evb-2x2-failru", 2, 2, {{"ruFailurePolicy", "fail", ""}});
  run.start_run();
  run.require_progress(bu(0), "events_built", static_cast<double>(transport.work(2000)));
  run.process(ru(1)).kill_now();
  REQUIRE(run.wait_state(kEvm, "Failed", std::chrono::seconds(60)));  // ruTimeout is 5 s; a bound against a hang
  CHECK_THAT(run.reason(kEvm), Contains("RU 101"));
  CHECK(run.metric(kEvm, "rus_alive") == 1);  // the RU the reason names down is not also counted alive
  for (std::uint32_t t : {ru(0), bu(0), bu(1)}) {
    REQUIRE(run.wait_state(t, "Failed", std::chrono::seconds(60)));
    CHECK_THAT(run.reason(t), Contains("RU 101"));
  }
  // Failed units halt cleanly and give every block back.
  for (std::uint32_t t : {kEvm, ru(0), bu(0), bu(1)}) CHECK(run.process(t).transition("halt").status == 200);
  for (std::uint32_t t : {kEvm, ru(0)}) CHECK(run.pool_empty(t, "evb/"));
  run.finish();
}

TEST_CASE("2x2_stallBU: a BU that stalls (SIGSTOP) is dropped within 2 s and taken in again when it resumes, "
          "without a new run", "[transport][process][evb][failure]") {
  const TransportProfile& transport = suite_transport();
  EvbRun run(transport, "evb-2x2-stallbu", 2, 2, {});
  run.start_run();
  run.require_progress(bu(1), "events_built", static_cast<double>(transport.work(2000)));
  ::kill(run.process(bu(1)).pid(), SIGSTOP);
  const DropSeen drop = wait_for_drop(run, 1, Clock::now(), std::chrono::seconds(5));
  REQUIRE(drop.seen);
  INFO("dropped between " << drop.at_least << " s and " << drop.at_most << " s after the stop");
  CHECK(drop.at_least < 2.0);
  const double built = run.metric(bu(0), "events_built");
  run.require_progress(bu(0), "events_built", built + static_cast<double>(transport.work(2000)));
  ::kill(run.process(bu(1)).pid(), SIGCONT);
  REQUIRE(wait_until([&] { return run.metric(kEvm, "bus_alive") == 2; }, std::chrono::seconds(60)));
  // Taken in again once it resumed. On a slow machine (the emulated guest: once in CI) a BU that resumes may miss
  // its timeout once more while it catches up, and be dropped and taken in again: every drop is followed by its
  // readmission, with both BUs alive.
  CHECK(run.metric(kEvm, "bu_readmissions") >= 1);
  CHECK(wait_until([&] {
    return run.metric(kEvm, "bus_alive") == 2 && run.metric(kEvm, "bu_readmissions") == run.metric(kEvm, "bu_drops");
  }, std::chrono::seconds(60)));
  const double resumed = run.metric(bu(1), "events_built");
  run.require_progress(bu(1), "events_built", resumed + static_cast<double>(transport.work(1000)));
  run.stop_run();
  CHECK(run.metric(kEvm, "drained") == 1);
  CHECK(run.metric(kEvm, "events_completed") + run.metric(kEvm, "events_lost") == run.metric(kEvm, "events_assigned"));
  CHECK(run.metric(kEvm, "unexpected_discards") == 0);
  for (std::uint32_t b : {bu(0), bu(1)}) {
    CHECK(run.metric(b, "events_corrupt") == 0);
    CHECK(run.metric(b, "duplicate_pieces") == 0);
    CHECK(run.receive_pool_at_rest(b));
  }
  for (std::uint32_t r : {ru(0), ru(1), kEvm}) CHECK(run.pool_empty(r, "evb/"));
  run.finish();
}

TEST_CASE("1x1_failEvM: the EvM killed mid-run fails every unit with a clear reason and nothing hangs",
          "[transport][process][evb][failure]") {
  const TransportProfile& transport = suite_transport();
  EvbRun run(transport, "evb-1x1-failevm", 1, 1, {});
  run.start_run();
  run.require_progress(bu(0), "events_built", static_cast<double>(transport.work(1000)));
  run.process(kEvm).kill_now();
  for (std::uint32_t t : {ru(0), bu(0)}) {
    REQUIRE(run.wait_state(t, "Failed", std::chrono::seconds(60)));  // evmTimeout is 5 s; a bound against a hang
    CHECK_THAT(run.reason(t), Contains("EvM (TID 10) was silent"));
    CHECK(run.process(t).transition("halt").status == 200);
  }
  CHECK(run.pool_empty(ru(0), "evb/"));
  CHECK(run.receive_pool_at_rest(bu(0)));
  run.finish();
}

TEST_CASE("3x1_incompleteEvents: an RU killed mid-run makes the BU build events without it, flagged and counted "
          "(policy incomplete)", "[transport][process][evb][failure]") {
  const TransportProfile& transport = suite_transport();
  EvbRun run(transport, "evb-3x1-incomplete", 3, 1, {{"ruFailurePolicy", "incomplete", ""}});
  run.start_run();
  run.require_progress(bu(0), "events_built", static_cast<double>(transport.work(2000)));
  run.process(ru(2)).kill_now();
  run.require_progress(bu(0), "events_incomplete", static_cast<double>(transport.work(1000)));
  const double built = run.metric(bu(0), "events_built");
  run.require_progress(bu(0), "events_built", built + static_cast<double>(transport.work(2000)));
  CHECK(run.state(kEvm) == "Enabled");
  CHECK(run.metric(kEvm, "ru_downs") == 1);
  run.stop_run({ru(2)});
  const double assigned = run.metric(kEvm, "events_assigned");
  CHECK(run.metric(kEvm, "events_completed") + run.metric(kEvm, "events_lost") == assigned);
  CHECK(run.metric(kEvm, "events_lost") == 0);
  CHECK(run.metric(bu(0), "events_built") == assigned);
  CHECK(run.metric(kEvm, "events_incomplete") == run.metric(bu(0), "events_incomplete"));
  CHECK(run.metric(bu(0), "events_corrupt") == 0);
  for (std::uint32_t r : {ru(0), ru(1), kEvm}) CHECK(run.pool_empty(r, "evb/"));
  run.finish();
}

TEST_CASE("1x2_failBUs: an EvM whose builder units are all killed says so in its status reason and a gauge, counts "
          "none of them alive, and clears both when one is taken back", "[transport][process][evb][failure]") {
  const TransportProfile& transport = suite_transport();
  EvbRun run(transport, "evb-1x2-failbus", 1, 2, {});
  run.start_run();
  for (std::uint32_t tid : {bu(0), bu(1)}) run.require_progress(tid, "events_built", 500);

  // One left: the EvM goes on, nothing to say.
  run.process(bu(0)).kill_now();
  REQUIRE(wait_for_drop(run, 1, Clock::now(), std::chrono::seconds(10)).seen);
  CHECK(run.metric(kEvm, "no_builder_left") == 0);
  CHECK(run.reason(kEvm).empty());

  // None left: still Enabled (a BU that returns is taken back), and the reason and the gauges say so together.
  run.process(bu(1)).kill_now();
  REQUIRE(wait_until([&] { return run.metric(kEvm, "no_builder_left") == 1; }, std::chrono::seconds(10)));
  const std::string reason = run.reason(kEvm);
  INFO("EvM reason: " << reason);
  CHECK(run.state(kEvm) == "Enabled");
  CHECK_THAT(reason, Contains("no builder unit left") && Contains("BU " + std::to_string(bu(0)) + " dropped: ") &&
                         Contains("BU " + std::to_string(bu(1)) + " dropped: "));
  CHECK(run.metric(kEvm, "bus_alive") == 0);
  CHECK(run.metric(kEvm, "bu_drops") == 2);
  CHECK(run.metric(kEvm, "events_in_flight") == 0);  // what the dropped BUs held is counted lost
  CHECK(run.metric(kEvm, "events_completed") + run.metric(kEvm, "events_lost") ==
        run.metric(kEvm, "events_assigned"));

  // One comes back: taken in, and the EvM has nothing more to say.
  run.start(bu(1));
  REQUIRE(run.process(bu(1)).wait_ready());
  run.bring_up(bu(1));
  REQUIRE(wait_until([&] { return run.metric(kEvm, "bus_alive") == 1; }, std::chrono::seconds(60)));
  run.require_progress(bu(1), "events_built", 500);  // past a possible second drop while an RU reconnects
  CHECK(run.metric(kEvm, "no_builder_left") == 0);
  CHECK(run.reason(kEvm).empty());

  run.stop_run({bu(0)});
  CHECK(run.metric(kEvm, "drained") == 1);
  run.finish();
}
