// The tests' partition builder writes what the executive's own parser reads back: contexts, endpoints,
// applications with typed properties, policy, control and launch rules, with markup in values escaped; and it adds
// to a partition written elsewhere.
#include <catch2/catch.hpp>

#include <stdexcept>

#include "../../../tests/support/partition_builder.hpp"
#include "daqx/executive/partition.hpp"

using daqx::test::PartitionBuilder;

TEST_CASE("partition builder: what it writes the executive reads back, property types and escaping included") {
  PartitionBuilder builder("built <&\"partition\">");
  daqx::test::ContextBuilder context = builder.context("http://127.0.0.1:31000");
  context.endpoint("tcp", "127.0.0.1", 31001, "data").property("mode", "throughput");
  context.module("libdaqx_pttcp.so").module("libdaqx_evb.so");
  context.application("evb::RU", 100, 1, "data")
      .property("sources", "8", "unsigned")
      .properties({{"label", "a < b & \"c\"", ""}});
  builder.context("http://127.0.0.1:32000").application("evb::EvM", 10);
  builder.thread_rule("pt/tcp/*", "0-1", "http://127.0.0.1:31000").pool_rule("evb/ru/*/pool", "heap");
  // token file, reads, tls, certificate, key, ca, bind
  builder.control({"/tmp/token", "token", "", "", "", "", "any"});
  // pattern, ssh target, prefix, executive, work dir, environment
  builder.launch_engine("local").launch_host({"*", "", "", "", "", {{"DAQX_MODULE_PATH", "/x y"}}});
  // pattern, policy, max restarts, backoff, max backoff
  builder.launch_restart({"*", "on-failure", "2", "", ""});

  const daqx::config::Partition partition = daqx::config::parse_partition(builder.xml(), "built.xml");
  CHECK(partition.name == "built <&\"partition\">");
  REQUIRE(partition.contexts.size() == 2);
  const daqx::config::ContextConfig& first = partition.contexts[0];
  CHECK(first.url == "http://127.0.0.1:31000");
  REQUIRE(first.endpoints.size() == 1);
  CHECK(first.endpoints[0].protocol == "tcp");
  CHECK(first.endpoints[0].port == 31001);
  CHECK(first.endpoints[0].network == "data");
  REQUIRE(first.endpoints[0].properties.size() == 1);
  CHECK(first.endpoints[0].properties[0].value == "throughput");
  REQUIRE(first.modules.size() == 2);
  CHECK(first.modules[1].path == "libdaqx_evb.so");
  REQUIRE(first.applications.size() == 1);
  const daqx::config::ApplicationConfig& ru = first.applications[0];
  CHECK(ru.class_name == "evb::RU");
  CHECK(ru.id == 100);
  CHECK(ru.instance == 1);
  CHECK(ru.network == "data");
  REQUIRE(ru.properties.size() == 2);
  CHECK(ru.properties[0].name == "sources");
  CHECK(ru.properties[0].type == daqx::ParamType::unsigned_integer);
  CHECK(ru.properties[0].value == "8");
  CHECK(ru.properties[1].value == "a < b & \"c\"");
  CHECK_FALSE(ru.properties[1].type.has_value());
  REQUIRE(partition.application(10) != nullptr);
  CHECK(partition.context_of(10)->url == "http://127.0.0.1:32000");
  REQUIRE(partition.policy.size() == 2);
  CHECK(partition.policy[0].cores == std::vector<int>{0, 1});
  CHECK(partition.policy[0].context == "http://127.0.0.1:31000");
  CHECK(partition.policy[1].allocator == "heap");
  CHECK(partition.control.present);
  CHECK(partition.control.token_file == "/tmp/token");
  CHECK(partition.control.reads == daqx::config::ControlConfig::Reads::token);
  CHECK(partition.control.bind == daqx::config::ControlConfig::Bind::any);
  CHECK(partition.launch.engine == "local");
  REQUIRE(partition.launch.hosts.size() == 1);
  CHECK(partition.launch.hosts[0].environment[0].second == "/x y");
  REQUIRE(partition.launch.restarts.size() == 1);
  CHECK(partition.launch.restarts[0].max_restarts == 2);
}

TEST_CASE("partition builder: a partition written elsewhere keeps what it holds, and what is added comes after it") {
  PartitionBuilder builder = PartitionBuilder::extending(
      "<?xml version=\"1.0\"?>\n<Partition name=\"generated\">\n"
      "  <Context url=\"http://127.0.0.1:31000\"><Application class=\"evb::EvM\" id=\"10\"/></Context>\n"
      "</Partition>\n");
  builder.launch_engine("ssh").launch_host({"*", "", "", "", "", {{"DAQX_MODULE_PATH", "/x"}}});

  const daqx::config::Partition partition = daqx::config::parse_partition(builder.xml(), "extended.xml");
  CHECK(partition.name == "generated");
  REQUIRE(partition.contexts.size() == 1);
  REQUIRE(partition.application(10) != nullptr);
  CHECK(partition.launch.engine == "ssh");
  REQUIRE(partition.launch.hosts.size() == 1);
  CHECK(partition.launch.hosts[0].environment[0].second == "/x");
  CHECK_THROWS_AS(PartitionBuilder::extending("<Context/>"), std::runtime_error);
}
