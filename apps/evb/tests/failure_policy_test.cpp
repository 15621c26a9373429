// The EvM's failure policies as a specification, on the proxies' records alone (no messaging): when a silent
// BU is dropped and what it loses, how a dropped or restarted BU is refused and taken in again without a storm
// of resets, when the EvM says no builder is left; when an RU counts as down, and what each ruFailurePolicy
// makes of it.
#include <catch2/catch.hpp>

#include <chrono>
#include <string>
#include <vector>

#include "evm/bu_drop_policy.hpp"
#include "evm/ru_failure_policy.hpp"
#include "idle_context.hpp"
#include "outbox.hpp"

using namespace daqx;
using namespace daqx::evb;
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
