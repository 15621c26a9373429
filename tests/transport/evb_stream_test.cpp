// Transport suite, the BU's stream of built events: evb::Monitor applications, each its own executive, subscribe
// to a BU's stream `events` over the transport of the run. A `block` monitor gets every event, verified and
// without a gap, back-pressuring the builder; a sampled monitor stopped (SIGSTOP) slows nothing, has its drops
// counted and receives again when it resumes; a monitor killed mid-run is counted lost and one started in its
// place receives. Every count is checked against the event builder's own: nothing is lost.
#include <catch2/catch.hpp>

#include <signal.h>

#include <cstdio>
#include <string>
#include <thread>

#include "../support/evb_run.hpp"
#include "../support/executive_metrics.hpp"
#include "suite.hpp"

using namespace daqx::test;
using Clock = std::chrono::steady_clock;

namespace {

constexpr std::uint32_t monitor(int i) { return 300 + static_cast<std::uint32_t>(i); }

EvbUnit monitor_of(std::uint32_t publisher, int instance, const std::string& policy) {
  return {"evb::Monitor", monitor(instance), instance,
          {{"publisher", std::to_string(publisher), "applications"}, {"policy", policy, ""}, {"verify", "true", ""}}};
}

// A publisher's counter for one subscriber (its series labelled subscriber="tid <tid>").
double for_subscriber(EvbRun& run, std::uint32_t publisher, const std::string& name, std::uint32_t subscriber) {
  return labelled_metric(run.process(publisher), publisher, name, "subscriber", "tid " + std::to_string(subscriber));
}

// Configure everything; enable the BUs, then the monitors, and wait until the BU has every monitor subscribed
// before the RUs and the EvM start the flow, so that a block monitor sees the run's first event.
void start_with_monitors(EvbRun& run, const std::vector<std::uint32_t>& bus, const std::vector<std::uint32_t>& monitors,
                         std::uint32_t publisher) {
  for (std::uint32_t tid : run.tids()) REQUIRE(run.process(tid).transition("configure").status == 200);
  for (std::uint32_t tid : bus) REQUIRE(run.process(tid).transition("enable").status == 200);
  for (std::uint32_t tid : monitors) REQUIRE(run.process(tid).transition("enable").status == 200);
  const bool subscribed = wait_until([&] {
    return run.metric(publisher, "stream_subscribers") == static_cast<double>(monitors.size());
  }, std::chrono::seconds(60));
  INFO("every unit:\n" << (subscribed ? std::string() : run.picture()));
  REQUIRE(subscribed);
  for (std::uint32_t tid : run.tids()) {
    const std::string cls = run.unit(tid).cls;
    if (cls == "evb::RU" || cls == "evb::EvM") REQUIRE(run.process(tid).transition("enable").status == 200);
  }
}

// The event builder's counts add up after its stop: every assigned event built once, checked, nothing lost.
void check_event_builder(EvbRun& run, const std::vector<std::uint32_t>& bus) {
  const double assigned = run.metric(kEvm, "events_assigned");
  INFO("assigned " << assigned << ", completed " << run.metric(kEvm, "events_completed") << ", lost "
                   << run.metric(kEvm, "events_lost") << "; BU drops " << run.metric(kEvm, "bu_drops")
                   << ", readmissions " << run.metric(kEvm, "bu_readmissions") << ", RU downs "
                   << run.metric(kEvm, "ru_downs") << "; the EvM: " << run.state(kEvm) << " " << run.reason(kEvm));
  CHECK(run.metric(kEvm, "drained") == 1);
  CHECK(run.metric(kEvm, "events_lost") == 0);
  CHECK(run.metric(kEvm, "events_completed") == assigned);
  CHECK(run.metric(kEvm, "unexpected_discards") == 0);
  CHECK(run.sum(bus, "events_built") == assigned);
  for (std::uint32_t b : bus) {
    // Copies where the receive pool had no view left: allowed, but shown (a transport that runs short of views).
    std::printf("BU %u: stream_pieces_copied %.0f\n", b, run.metric(b, "stream_pieces_copied"));
    CHECK(run.metric(b, "events_corrupt") == 0);
    CHECK(run.metric(b, "events_incomplete") == 0);
    CHECK(run.metric(b, "duplicate_pieces") == 0);
    CHECK(run.metric(b, "protocol_errors") == 0);
    CHECK(run.metric(b, "stream_events_withheld") == 0);
    CHECK(run.metric(b, "fragments_received") == run.metric(b, "events_built") * 3);  // EvM + 2 RUs
  }
  for (std::uint32_t r : {ru(0), ru(1)}) CHECK(run.metric(r, "fragments_sent") == assigned);
}

}  // namespace

TEST_CASE("2x2 with two monitors on a BU's stream: the block one gets every event the BU builds, verified and without "
          "a gap, and the sample:100 one stopped (SIGSTOP) for seconds slows nothing, has its drops counted and receives "
          "again after SIGCONT", "[transport][process][evb][stream][native]") {
  const TransportProfile& transport = suite_transport();
  const std::uint32_t recorder = monitor(0), sampler = monitor(1);
  EvbRun run(transport, "evb-2x2-stream", 2, 2, {{"buTimeout", "10", ""}, {"drainTimeout", "120", ""}},
             {{"fragmentSize", "3000", "unsigned"}, {"fragmentSpread", "2000", "unsigned"}}, {}, {},
             {monitor_of(bu(0), 0, "block"), monitor_of(bu(0), 1, "sample:100")});
  start_with_monitors(run, {bu(0), bu(1)}, {recorder, sampler}, bu(0));
  run.require_progress(bu(0), "events_built", 2000);
  run.require_progress(sampler, "events_received", 5);

  // Stopped for several seconds: the builder goes on at its pace (the block monitor keeps up), the stopped
  // monitor's events are dropped by its policy, counted by the publisher as they happen.
  const pid_t stopped = run.process(sampler).pid();
  const double built_before = run.metric(bu(0), "events_built");
  const double dropped_before = for_subscriber(run, bu(0), "subscriber_dropped", sampler);
  const double received_before = run.metric(sampler, "events_received");
  const Clock::time_point stop_time = Clock::now();
  ::kill(stopped, SIGSTOP);
  run.require_progress(bu(0), "events_built", built_before + 20000);
  run.require_progress(recorder, "events_received", built_before + 20000);
  std::this_thread::sleep_until(stop_time + std::chrono::seconds(3));  // at least that long, however fast the run
  const double dropped_while_stopped = for_subscriber(run, bu(0), "subscriber_dropped", sampler) - dropped_before;
  ::kill(stopped, SIGCONT);
  INFO("while the sampler was stopped: the BU built " << run.metric(bu(0), "events_built") - built_before
       << " events, the publisher dropped " << dropped_while_stopped << " for it");
  CHECK(dropped_while_stopped > 0);
  run.require_progress(sampler, "events_received", received_before + 5);
  // The drops reach it with the first record sent after them (its backlog from before the stop goes first).
  run.require_progress(sampler, "events_dropped_by_publisher", 1);

  // Stopped in the launcher's order, the monitors once the block one has every event its BU built.
  run.process(kEvm).transition("stop");
  for (std::uint32_t r : {ru(0), ru(1)}) run.process(r).transition("stop");
  run.require_progress(recorder, "events_received", run.metric(bu(0), "events_built"));
  CHECK(for_subscriber(run, bu(0), "subscriber_dropped", recorder) == 0);  // while it is subscribed
  for (std::uint32_t m : {recorder, sampler}) run.process(m).transition("stop");
  for (std::uint32_t b : {bu(0), bu(1)}) run.process(b).transition("stop");

  check_event_builder(run, {bu(0), bu(1)});
  CHECK(run.metric(recorder, "events_received") == run.metric(bu(0), "events_built"));
  CHECK(run.metric(recorder, "events_dropped_by_publisher") == 0);
  CHECK(run.metric(sampler, "events_dropped_by_publisher") > 0);
  for (std::uint32_t m : {recorder, sampler}) {
    CHECK(run.metric(m, "sequence_gaps") == 0);
    CHECK(run.metric(m, "verify_failures") == 0);
    CHECK(run.metric(m, "subscriptions") == 1);
  }
  CHECK(run.metric(bu(0), "stream_subscribers_lost") == 0);
  if (transport.capabilities.shared_memory_pools) {
    // Over shared memory the records go by reference, the RUs' blocks in them included: the BU passes the RUs'
    // chunks on to the monitors. It copies a record only while the memfd of one of its chunks is on its way from
    // the RU (asked once per chunk): never because a subscriber held too much (it holds at most its depth of
    // records, 64 here, of a few blocks each, well under passOnBlocks), not even the stopped sampler.
    ExecutiveProcess& publisher = run.process(bu(0));
    const double copied = transport_metric(publisher, "frames_copied");
    const double passed_on = transport_metric(publisher, "chunks_passed_on");
    std::printf("BU %u: frames_copied %.0f, pass_on_waits %.0f, chunks_passed_on %.0f, records to the recorder %.0f\n",
                bu(0), copied, transport_metric(publisher, "pass_on_waits"), passed_on,
                run.metric(recorder, "events_received"));
    CHECK(passed_on > 0);
    CHECK(transport_metric(publisher, "pass_on_limited") == 0);
    CHECK(copied == transport_metric(publisher, "pass_on_waits"));
  }
  for (std::uint32_t b : {bu(0), bu(1)}) CHECK(run.receive_pool_at_rest(b));
  for (std::uint32_t r : {ru(0), ru(1), kEvm}) CHECK(run.pool_empty(r, "evb/"));
  run.finish();
}

TEST_CASE("a monitor killed (SIGKILL) mid-run is counted lost by its BU, which builds on, and a monitor started in "
          "its place receives", "[transport][process][evb][stream][failure]") {
  const TransportProfile& transport = suite_transport();
  const std::uint32_t watcher = monitor(0);
  EvbRun run(transport, "evb-2x2-stream-kill", 2, 2, {{"buTimeout", "10", ""}, {"drainTimeout", "120", ""}},
             {{"fragmentSize", "3000", "unsigned"}, {"fragmentSpread", "2000", "unsigned"}}, {}, {},
             {monitor_of(bu(0), 0, "drop-oldest,depth:16")});
  start_with_monitors(run, {bu(0), bu(1)}, {watcher}, bu(0));
  run.require_progress(watcher, "events_received", 100);
  run.process(watcher).kill_now();
  // The publisher learns it from its transport (a send that fails, a connection that closes).
  const bool lost = wait_until([&] { return run.metric(bu(0), "stream_subscribers_lost") >= 1; }, std::chrono::seconds(60));
  INFO("every unit:\n" << (lost ? std::string() : run.picture()));
  REQUIRE(lost);
  CHECK(run.metric(bu(0), "stream_subscribers") == 0);
  run.require_progress(bu(0), "events_built",
                       run.metric(bu(0), "events_built") + static_cast<double>(transport.work(2000)));

  run.start(watcher);
  REQUIRE(run.process(watcher).wait_ready());
  run.bring_up(watcher);
  run.require_progress(watcher, "events_received", 100);
  CHECK(run.metric(bu(0), "stream_subscribers") == 1);

  run.stop_run();
  check_event_builder(run, {bu(0), bu(1)});
  CHECK(run.metric(watcher, "sequence_gaps") == 0);
  CHECK(run.metric(watcher, "verify_failures") == 0);
  for (std::uint32_t b : {bu(0), bu(1)}) CHECK(run.receive_pool_at_rest(b));
  for (std::uint32_t r : {ru(0), ru(1), kEvm}) CHECK(run.pool_empty(r, "evb/"));
  run.finish();
}
