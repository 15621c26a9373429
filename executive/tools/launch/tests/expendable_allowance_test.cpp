// The launcher's allowance of lost contexts as a specification: a context that ended for good is lost within the
// partition's <Expendable> rules when each of its applications is of a class they allow to lose and no class goes
// past its allowance; otherwise the run fails, naming the allowance, and nothing is counted lost.
#include <catch2/catch.hpp>

#include "daqx/executive/partition.hpp"
#include "expendable_allowance.hpp"

using namespace daqx;
using daqx::launch::ExpendableAllowance;

namespace {

// 1 RU, 3 BUs (one context each) and a context holding a BU and the EvM; one BU may be lost.
const char* const kPartition = R"(<Partition name="expendable">
  <Context url="http://ru:9000"><Application class="evb::RU" id="100"/></Context>
  <Context url="http://bu0:9000"><Application class="evb::BU" id="200"/></Context>
  <Context url="http://bu1:9000"><Application class="evb::BU" id="201" instance="1"/></Context>
  <Context url="http://bu2:9000"><Application class="evb::BU" id="202" instance="2"/></Context>
  <Context url="http://evm:9000">
    <Application class="evb::BU" id="203" instance="3"/>
    <Application class="evb::EvM" id="10"/>
  </Context>
  <Launch>
    <Expendable class="evb::BU" min="3"/>
  </Launch>
</Partition>
)";

}  // namespace

TEST_CASE("a BU context that ended for good is lost within the allowance and the run goes on, and the next one fails it, "
          "naming the allowance and where it is written", "[launch][expendable]") {
  const config::Partition partition = config::parse_partition(kPartition, "expendable.xml");
  ExpendableAllowance allowance(partition.launch);
  const ExpendableAllowance::Verdict first = allowance.lose(partition.contexts[1], "died (killed by signal 9 (Killed))");
  CHECK(first.run_goes_on);
  CHECK(first.message == "1 evb::BU lost, 1 allowed: the run goes on");
  REQUIRE(allowance.lost().size() == 1);
  CHECK(allowance.lost()[0] == "lost: evb::BU 200 (context http://bu0:9000, died (killed by signal 9 (Killed)))");
  REQUIRE(allowance.lost_because("http://bu0:9000") != nullptr);
  CHECK(*allowance.lost_because("http://bu0:9000") == "died (killed by signal 9 (Killed))");
  CHECK(allowance.lost_because("http://bu1:9000") == nullptr);

  const ExpendableAllowance::Verdict second = allowance.lose(partition.contexts[2], "died (exit code 1)");
  CHECK_FALSE(second.run_goes_on);
  CHECK(second.message == "2 evb::BU lost, 1 allowed by the partition's <Expendable> at expendable.xml:11");
  CHECK(allowance.lost().size() == 1);  // the run fails: not counted lost
  CHECK(allowance.lost_because("http://bu1:9000") == nullptr);
}

TEST_CASE("a context holding an application of a class no rule allows to lose fails the run, naming the class",
          "[launch][expendable]") {
  const config::Partition partition = config::parse_partition(kPartition, "expendable.xml");
  ExpendableAllowance allowance(partition.launch);
  const ExpendableAllowance::Verdict ru = allowance.lose(partition.contexts[0], "died (exit code 1)");
  CHECK_FALSE(ru.run_goes_on);
  CHECK(ru.message == "its evb::RU may not be lost (no <Expendable> rule for evb::RU)");
  // A BU beside the EvM: the EvM may not be lost, so neither may their context.
  const ExpendableAllowance::Verdict evm = allowance.lose(partition.contexts[4], "died (exit code 1)");
  CHECK_FALSE(evm.run_goes_on);
  CHECK_THAT(evm.message, Catch::Contains("evb::EvM may not be lost"));
  CHECK(allowance.lost().empty());
}

TEST_CASE("without <Expendable> rules no context may be lost, and the launcher's own message says why",
          "[launch][expendable]") {
  const config::Partition partition = config::parse_partition(
      R"(<Partition name="p"><Context url="http://bu0:9000"><Application class="evb::BU" id="200"/></Context></Partition>)",
      "p.xml");
  ExpendableAllowance allowance(partition.launch);
  const ExpendableAllowance::Verdict verdict = allowance.lose(partition.contexts[0], "died (exit code 1)");
  CHECK_FALSE(verdict.run_goes_on);
  CHECK(verdict.message.empty());
}
