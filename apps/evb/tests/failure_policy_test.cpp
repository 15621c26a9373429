// The EvM's failure policies as a specification, on the proxies' records alone (no messaging): when a silent
// BU is dropped and what it loses, how a dropped or restarted BU is refused and taken in again without a storm
// of resets, when the EvM says no builder is left; when an RU counts as down, and what each ruFailurePolicy
// makes of it; how many units out of the run the partition's <Expendable> rule lets the run go on with.
#include <catch2/catch.hpp>

#include <chrono>
#include <string>
#include <vector>

#include "evm/bu_drop_policy.hpp"
#include "evm/builder_totals.hpp"
#include "evm/ru_failure_policy.hpp"
#include "evm/unit_loss_allowance.hpp"
#include "idle_context.hpp"
#include "common/outbox.hpp"

using namespace daqx;
using namespace daqx::evb;
using namespace daqx::evb::evm;
using std::chrono::milliseconds;

namespace {

struct Fixture {
  test::IdleContext context;
  Outbox outbox{context};
  Clock::time_point t0 = Clock::now();
};

Request request_of(const BuProxy& bu, std::uint64_t incarnation, std::vector<std::uint32_t> free_slots = {}) {
  Request r;
  r.run = 1;
  r.generation = bu.generation();
  r.incarnation = incarnation;
  r.priority = 200;
  r.total_slots = 4;
  r.free_slots = std::move(free_slots);
  return r;
}

// A BU of run 1 taken in with incarnation 7 (reset, then its answer), as the EvM does at the start of a run.
void take_in(const BuDropPolicy& policy, BuProxy& bu, Clock::time_point now) {
  bu.start_run(1);
  const Request first = request_of(bu, 7);
  REQUIRE(policy.admit(bu, first) == BuDropPolicy::Admission::refused);  // not known yet: reset first
  REQUIRE(policy.readmit(bu, first, now));
  REQUIRE(policy.admit(bu, request_of(bu, 7)) == BuDropPolicy::Admission::taken_in);
  REQUIRE(bu.state() == BuProxy::State::alive);
}

}  // namespace

TEST_CASE("BU drop: a BU is dropped once silent longer than buTimeout, not before, and loses what it held") {
  Fixture f;
  const BuDropPolicy policy(2.0);
  BuProxy bu(201, f.context, f.outbox);
  take_in(policy, bu, f.t0);
  bu.take_request(request_of(bu, 7, {0, 1}), f.t0);
  REQUIRE(bu.credits() == 2);
  bu.assign_front_credit(8, 1);
  bu.assign_front_credit(8, 9);
  CHECK(bu.events_in_flight() == 16);

  CHECK_FALSE(policy.check_liveness(bu, f.t0 + milliseconds(1999)));
  const auto why = policy.check_liveness(bu, f.t0 + milliseconds(2500));
  REQUIRE(why);
  CHECK_THAT(*why, Catch::StartsWith("no request for 2.5"));

  const std::uint32_t generation = bu.generation();
  CHECK(policy.drop(bu, *why) == 16);  // its events are lost, counted for it
  CHECK(bu.state() == BuProxy::State::dropped);
  CHECK(bu.events_in_flight() == 0);
  CHECK(bu.credits() == 0);
  CHECK(bu.drops() == 1);
  CHECK(bu.generation() == generation + 1);  // nothing of the old generation is taken any more
  CHECK(BuDropPolicy::drop_message(bu, *why, 16) == "BU 201 dropped: " + *why + "; 16 events lost");
  // A dropped BU is not checked for silence again.
  CHECK_FALSE(policy.check_liveness(bu, f.t0 + std::chrono::seconds(60)));
}

TEST_CASE("BU readmission: a dropped BU's old requests are refused, a reset takes it in again, at most one a 50 ms") {
  Fixture f;
  const BuDropPolicy policy(2.0);
  BuProxy bu(201, f.context, f.outbox);
  take_in(policy, bu, f.t0);
  Request old = request_of(bu, 7, {0});
  policy.drop(bu, "silent");

  CHECK(policy.admit(bu, old) == BuDropPolicy::Admission::refused);  // the generation it had
  const Clock::time_point later = f.t0 + std::chrono::seconds(3);
  CHECK(policy.readmit(bu, old, later));       // a reset goes out
  CHECK(bu.state() == BuProxy::State::unknown);  // until it answers
  CHECK_FALSE(policy.readmit(bu, old, later + milliseconds(10)));  // not again within 50 ms to the same one
  CHECK(policy.readmit(bu, old, later + milliseconds(60)));
  CHECK(policy.admit(bu, request_of(bu, 7)) == BuDropPolicy::Admission::taken_in_again);
  CHECK(bu.state() == BuProxy::State::alive);
  CHECK(policy.admit(bu, request_of(bu, 7)) == BuDropPolicy::Admission::current);
}

TEST_CASE("BU readmission: a restarted BU (a new incarnation) is refused and reset at once, whatever the last reset") {
  Fixture f;
  const BuDropPolicy policy(2.0);
  BuProxy bu(201, f.context, f.outbox);
  take_in(policy, bu, f.t0);
  const Request restarted = request_of(bu, 8);  // same generation, another incarnation
  CHECK(policy.admit(bu, restarted) == BuDropPolicy::Admission::refused);
  CHECK(policy.readmit(bu, restarted, f.t0 + milliseconds(1)));
  CHECK(bu.incarnation() == 8);
}

TEST_CASE("no builder left: said only when every BU is out and at least one was dropped, naming each") {
  Fixture f;
  const BuDropPolicy policy(2.0);
  std::vector<BuProxy> bus;
  bus.emplace_back(201, f.context, f.outbox);
  bus.emplace_back(202, f.context, f.outbox);
  for (BuProxy& bu : bus) bu.start_run(1);
  CHECK_FALSE(BuDropPolicy::no_builder_left(bus));  // none heard yet, none dropped: a run starting
  take_in(policy, bus[0], f.t0);
  policy.drop(bus[0], "no request for 2.5 s");
  const auto condition = BuDropPolicy::no_builder_left(bus);
  REQUIRE(condition);
  CHECK_THAT(*condition, Catch::Contains("BU 201 dropped: no request for 2.5 s") &&
                             Catch::Contains("BU 202 never heard"));
  take_in(policy, bus[1], f.t0);
  CHECK_FALSE(BuDropPolicy::no_builder_left(bus));
}

TEST_CASE("ruFailurePolicy: fail or incomplete, anything else refused naming the parameter") {
  CHECK(parse_ru_failure_policy("fail") == RuFailurePolicy::fail);
  CHECK(parse_ru_failure_policy("incomplete") == RuFailurePolicy::incomplete);
  CHECK_THROWS_WITH(parse_ru_failure_policy("Fail"), Catch::Contains("ruFailurePolicy: 'Fail'"));
  CHECK_THROWS_WITH(parse_ru_failure_policy(""), Catch::Contains("neither fail nor incomplete"));
}

TEST_CASE("RU down: silent longer than ruTimeout, or never heard past ruTimeout and the start grace") {
  Fixture f;
  RuProxy ru(301, f.context, f.outbox);
  ru.start_run();
  // Never heard: slow starts get ruTimeout plus 10 s.
  CHECK_FALSE(ru_silence(ru, f.t0 + std::chrono::seconds(11), f.t0, 2.0));
  const auto never = ru_silence(ru, f.t0 + std::chrono::seconds(13), f.t0, 2.0);
  REQUIRE(never);
  CHECK_THAT(*never, Catch::StartsWith("no status since the run started"));
  // Heard, then silent.
  ru.take_in(5);
  ru.heard(f.t0);
  CHECK_FALSE(ru_silence(ru, f.t0 + milliseconds(1900), f.t0, 2.0));
  const auto silent = ru_silence(ru, f.t0 + milliseconds(2500), f.t0, 2.0);
  REQUIRE(silent);
  CHECK_THAT(*silent, Catch::StartsWith("no status for 2.5"));
  // Down is final for the run: not found silent again.
  ru.go_down();
  CHECK_FALSE(ru_silence(ru, f.t0 + std::chrono::seconds(60), f.t0, 2.0));
}

TEST_CASE("RU down: policy fail fails the run, policy incomplete goes on and says so") {
  Fixture f;
  RuProxy ru(301, f.context, f.outbox);
  const RuDownVerdict fail = ru_down_verdict(RuFailurePolicy::fail, ru, "no status for 2.5 s");
  CHECK(fail.reason == "RU 301 is down: no status for 2.5 s");
  CHECK(fail.fail_run);
  CHECK(fail.log_line.empty());
  const RuDownVerdict go_on = ru_down_verdict(RuFailurePolicy::incomplete, ru, "no status for 2.5 s");
  CHECK(go_on.reason == fail.reason);
  CHECK_FALSE(go_on.fail_run);
  CHECK_THAT(go_on.log_line, Catch::Contains("built without it, flagged incomplete"));
}

TEST_CASE("expendable BUs: the BUs out of the run are those dropped and not taken in again, and one more than the "
          "partition allows fails the run, naming the allowance and each BU out") {
  Fixture f;
  const BuDropPolicy policy(2.0);
  std::vector<BuProxy> bus;
  for (Tid tid : {201u, 202u, 203u}) bus.emplace_back(tid, f.context, f.outbox);
  BuilderTotals totals;
  totals.start(bus.size());
  for (std::size_t i = 0; i < bus.size(); ++i) {
    take_in(policy, bus[i], f.t0);
    totals.note(i, bus[i]);
  }
  const UnitLossAllowance allowance("evb::BU", 1);
  CHECK(totals.out() == 0);
  policy.drop(bus[0], "no request for 2.5 s");
  totals.note(0, bus[0]);
  CHECK(totals.out() == 1);
  CHECK_FALSE(allowance.exceeded(totals.out()));
  // Taken in again (restarted, or resumed): no longer out, though it was dropped this run.
  const Request again = request_of(bus[0], 9);
  REQUIRE(policy.readmit(bus[0], again, f.t0 + milliseconds(100)));
  totals.note(0, bus[0]);
  CHECK(totals.out() == 1);  // reset sent, not answered yet: still out
  REQUIRE(policy.admit(bus[0], request_of(bus[0], 9)) == BuDropPolicy::Admission::taken_in_again);
  totals.note(0, bus[0]);
  CHECK(totals.out() == 0);
  CHECK(totals.dropped() == 1);
  // Two out at once: past the allowance of one.
  policy.drop(bus[1], "RU 101 lost its connection to it");
  policy.drop(bus[2], "no request for 2.1 s");
  totals.note(1, bus[1]);
  totals.note(2, bus[2]);
  CHECK(totals.out() == 2);
  const auto exceeded = allowance.exceeded(totals.out());
  REQUIRE(exceeded);
  CHECK(*exceeded == "2 evb::BU lost, 1 allowed by the partition's <Expendable>");
  CHECK(BuDropPolicy::out_of_run(bus) ==
        "BU 202 dropped: RU 101 lost its connection to it; BU 203 dropped: no request for 2.1 s");
  // Without a rule, losses do not fail the run by themselves.
  CHECK_FALSE(UnitLossAllowance().limited());
  CHECK_FALSE(UnitLossAllowance().exceeded(3));
}

TEST_CASE("expendable units: the allowance is the partition's rule for the class of the EvM's units, none without "
          "one, and units of several classes under a rule are refused naming the parameter") {
  test::IdleContext context;
  context.peers = {{201, "evb::BU", 0, "http://a:1", false},
                   {202, "evb::BU", 1, "http://b:1", false},
                   {101, "evb::RU", 0, "http://c:1", false},
                   {301, "my::BU", 0, "http://d:1", false}};
  CHECK_FALSE(read_unit_loss_allowance(context, {201, 202}, "bus").limited());
  context.expendable = {{"evb::BU", 1}};
  const UnitLossAllowance bus = read_unit_loss_allowance(context, {202, 201}, "bus");
  CHECK(bus.limited());
  CHECK(bus.allowed() == 1);
  CHECK(bus.class_name() == "evb::BU");
  CHECK_FALSE(read_unit_loss_allowance(context, {101}, "rus").limited());
  CHECK_THROWS_WITH(read_unit_loss_allowance(context, {201, 301}, "bus"),
                    Catch::StartsWith("bus: its units are of 2 classes") && Catch::Contains("evb::BU"));
}
