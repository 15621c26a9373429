// The connection plan: a context connects to another only where one of its applications sends there (as its
// class declares its parameters), never where a parameter only names whom frames come from; an application whose
// class is not known here may send anywhere on its network.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "../../../tests/support/partition_builder.hpp"
#include "connection_plan.hpp"  // the executive's own (executive/runtime/src), to compare its two ways of planning
#include "module_loader.hpp"
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

namespace {

using daqx::ParamSpec;
using daqx::ParamType;
using daqx::PeerUse;
using daqx::detail::ConnectionPlan;

// Classes made up for the plan, declared here: a Sender sends to its `to` (default: every Receiver), a Relay to
// its `next` (default: every application) and names its `from` without sending there; Receivers send nowhere.
// Any other class is not known here and may send anywhere on its network.
ParamSpec selector(const std::string& name, const std::string& default_value, PeerUse peers = PeerUse::sends_to) {
  ParamSpec spec;
  spec.name = name;
  spec.type = ParamType::applications;
  spec.default_value = default_value;
  spec.peers = peers;
  return spec;
}

const std::vector<ParamSpec>* made_up_params(const daqx::config::ContextConfig&, std::string_view class_name) {
  static const std::vector<ParamSpec> sender = {selector("to", "class:test::Receiver")};
  static const std::vector<ParamSpec> relay = {selector("next", "*"),
                                               selector("from", "class:test::Sender", PeerUse::receives_from)};
  static const std::vector<ParamSpec> receiver = {};
  if (class_name == "test::Sender") return &sender;
  if (class_name == "test::Relay") return &relay;
  if (class_name == "test::Receiver") return &receiver;
  return nullptr;
}

// Senders, receivers and relays over two networks, with contexts on one network, on both, or holding several
// applications; selectors by class, by ids (one of them naming an id that does not exist), all, none.
daqx::config::Partition mixed_partition() {
  PartitionBuilder builder("mixed");
  int port = 32000;
  const auto context = [&](const std::vector<std::string>& networks) {
    daqx::test::ContextBuilder made = builder.context(url(port));
    for (const std::string& network : networks)
      made.endpoint("tcp", "127.0.0.1", static_cast<std::uint16_t>(++port), network);
    port += 10 - static_cast<int>(networks.size());
    return made;
  };
  context({"data"}).application("test::Sender", 1, 0, "data");
  context({"data"}).application("test::Sender", 2, 1, "data").property("to", "3, 5");
  context({"data"}).application("test::Receiver", 3, 0, "data");
  daqx::test::ContextBuilder both = context({"data", "slow"});
  both.application("test::Receiver", 4, 1, "data");
  both.application("test::Relay", 5, 0, "slow");
  context({"slow"}).application("test::Receiver", 6, 2, "slow");
  context({"slow"}).application("test::Sender", 7, 2, "slow").property("to", "6, 99");  // 99: none, so nowhere
  context({"data"}).application("other::Unknown", 8, 0, "data");
  daqx::test::ContextBuilder quiet = context({"data"});
  quiet.application("test::Relay", 9, 1, "data").property("next", "3");
  quiet.application("test::Receiver", 10, 3, "data");
  context({}).application("test::Sender", 11, 3);  // no network: reaches nobody, nobody reaches it
  return daqx::config::parse_partition(builder.xml(), "mixed.xml");
}

void check_each_context_plan_is_its_part_of_the_whole(const daqx::config::Partition& partition,
                                                       const ConnectionPlan::ClassParams& params) {
  const ConnectionPlan whole(partition, params);
  for (std::size_t c = 0; c < partition.contexts.size(); ++c) {
    INFO("context " << partition.contexts[c].url);
    const ConnectionPlan own = ConnectionPlan::of_context(partition, params, c);
    const ConnectionPlan whole_with_targets(partition, params, c);
    CHECK(own.outgoing(c) == whole.outgoing(c));
    CHECK(own.incoming(c) == whole.incoming(c));
    CHECK(own.outgoing_by_network(c) == whole.outgoing_by_network(c));
    for (const std::string network : {"data", "slow", "none"}) {
      CHECK(own.incoming(c, network) == whole.incoming(c, network));
      for (std::size_t to = 0; to < partition.contexts.size(); ++to)
        CHECK(own.connects(to, network) == whole_with_targets.connects(to, network));
    }
  }
}

}  // namespace

TEST_CASE("connection plan: each executive's plan of its own context, made in time linear in the partition, is its "
          "part of the whole partition's plan") {
  SECTION("senders, receivers and relays over two networks, selectors by class, ids and all, a class not known") {
    const daqx::config::Partition partition = mixed_partition();
    check_each_context_plan_is_its_part_of_the_whole(partition, made_up_params);
    // What the comparison compares, worked out by hand for a few contexts.
    const auto own = [&](std::size_t c) { return ConnectionPlan::of_context(partition, made_up_params, c); };
    CHECK(own(1).outgoing(1) == 1);  // Sender 2 to 3 and 5: Relay 5 is on slow, so Receiver 3 only
    CHECK(own(2).incoming(2) == 4);  // Receiver 3 from Senders 1 and 2, the unknown class and Relay 9
    CHECK(own(3).outgoing_by_network(3).at("slow") == 2);  // Relay 5 to every application on slow
    CHECK(own(3).incoming(3, "data") == 2);                 // Receiver 4 from Sender 1 and the unknown class
    CHECK(own(3).incoming(3, "slow") == 0);                 // Sender 7's selector names id 99: it selects nothing
    CHECK(own(5).outgoing(5) == 0);
    CHECK(own(6).outgoing(6) == 5);  // the unknown class to every context with an application on data
  }
  SECTION("the event builder, with the evb module's own parameters") {
    PartitionBuilder builder = event_builder();
    const daqx::config::Partition partition = daqx::config::parse_partition(builder.xml(), "plan.xml");
    daqx::detail::ModuleRegistry registry;
    REQUIRE(registry.load("libdaqx_evb.so", "").empty());
    check_each_context_plan_is_its_part_of_the_whole(
        partition, [&](const daqx::config::ContextConfig&, std::string_view class_name) {
          return registry.application_params(class_name);
        });
  }
}
