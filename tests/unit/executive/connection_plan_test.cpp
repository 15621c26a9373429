// The connection plan: a context connects to another only where one of its applications sends there (as its
// class declares its parameters), never where a parameter only names whom frames come from; an application whose
// class is not known here may send anywhere on its network.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "../../support/partition_builder.hpp"
#include "daqx/executive/executive.hpp"
#include "daqx/executive/partition.hpp"

using daqx::test::PartitionBuilder;

namespace {

std::string url(int port) { return "http://127.0.0.1:" + std::to_string(port); }

// An event builder of 3 RUs and 2 BUs, each unit in its own context on network "data".
PartitionBuilder event_builder() {
  PartitionBuilder builder("plan");
  int port = 31000;
  const auto unit = [&](const std::string& cls, std::uint32_t tid, std::uint32_t instance) {
    daqx::test::ContextBuilder context = builder.context(url(port));
    context.endpoint("tcp", "127.0.0.1", static_cast<std::uint16_t>(port + 1), "data");
    context.module("libdaqx_pttcp.so").module("libdaqx_evb.so");
    context.application(cls, tid, instance, "data");
    port += 10;
  };
  unit("evb::EvM", 10, 0);
  for (std::uint32_t i = 0; i < 3; ++i) unit("evb::RU", 100 + i, i);
  for (std::uint32_t j = 0; j < 2; ++j) unit("evb::BU", 200 + j, j);
  return builder;
}

std::vector<std::string> plan_of(const PartitionBuilder& builder, const std::string& context = "") {
  const daqx::config::Partition partition = daqx::config::parse_partition(builder.xml(), "plan.xml");
  return daqx::Executive::connection_plan(partition, context);
}

}  // namespace

TEST_CASE("connection plan: RUs connect to the BUs and the EvM, BUs to the EvM, the EvM to every unit, never RU to RU "
          "or BU to BU") {
  const std::vector<std::string> plan = plan_of(event_builder());
  REQUIRE(plan.size() == 7);  // the whole, then the six contexts
  // 3 RUs x (2 BUs + EvM) + 2 BUs x EvM + the EvM to 5 units: 16 of the 30 an all-to-all mesh would open.
  CHECK(plan[0].find("16 connections planned between 6 contexts") == 0);
  CHECK(plan[1] == "context " + url(31000) + ": 5 outgoing (5 on data), 5 incoming; about 266 file descriptors");
  for (int ru = 0; ru < 3; ++ru)
    CHECK(plan[2 + ru] ==
          "context " + url(31010 + 10 * ru) + ": 3 outgoing (3 on data), 1 incoming; about 260 file descriptors");
  for (int bu = 0; bu < 2; ++bu)
    CHECK(plan[5 + bu] ==
          "context " + url(31040 + 10 * bu) + ": 1 outgoing (1 on data), 4 incoming; about 261 file descriptors");
}

TEST_CASE("connection plan: a written selector narrows it, and --check's context line is that context's alone") {
  PartitionBuilder builder = event_builder();
  // The first RU sends to BU 200 only (the others keep the default, every BU).
  daqx::config::Partition partition = daqx::config::parse_partition(builder.xml(), "plan.xml");
  daqx::config::Property bus;
  bus.name = "bus";
  bus.value = "200";
  partition.contexts[1].applications[0].properties.push_back(bus);
  const std::vector<std::string> plan = daqx::Executive::connection_plan(partition, url(31010));
  REQUIRE(plan.size() == 2);
  CHECK(plan[0].find("15 connections planned") == 0);
  CHECK(plan[1] == "context " + url(31010) + ": 2 outgoing (2 on data), 1 incoming; about 259 file descriptors");
}

TEST_CASE("connection plan: an application whose class is not known here may send to every context on its network") {
  PartitionBuilder builder = event_builder();
  daqx::test::ContextBuilder context = builder.context(url(31100));
  context.endpoint("tcp", "127.0.0.1", 31101, "data");
  context.module("libdaqx_no_such_module.so");
  context.application("other::Sender", 900, 0, "data");
  const std::vector<std::string> plan = plan_of(builder, url(31100));
  REQUIRE(plan.size() == 2);
  CHECK(plan[0].find("22 connections planned between 7 contexts") == 0);
  CHECK(plan[1] == "context " + url(31100) + ": 6 outgoing (6 on data), 0 incoming; about 262 file descriptors");
}
