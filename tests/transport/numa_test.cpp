// Where pool memory really is, on a machine with two NUMA nodes (the soft-RoCE guest started with --numa):
// ptibv's own pools on the node its numaNode parameter names, an application pool on the node its policy
// rule names, both checked page by page with move_pages on the executive's address space.
#include <sys/syscall.h>
#include <unistd.h>

#include <Poco/JSON/Array.h>
#include <Poco/JSON/Object.h>
#include <Poco/JSON/Parser.h>
#include <catch2/catch.hpp>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "suite.hpp"

using namespace daqx::test;

namespace {

int numa_nodes() {
  int nodes = 0;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator("/sys/devices/system/node", error))
    if (entry.path().filename().string().rfind("node", 0) == 0) ++nodes;
  return nodes;
}

// The node of every page of a range of another process's memory (move_pages with no target nodes only asks);
// -errno for a page whose node is unknown.
std::vector<int> nodes_of_pages(pid_t pid, std::uint64_t address, std::uint64_t bytes) {
  std::vector<void*> pages;
  for (std::uint64_t page = address & ~std::uint64_t{4095}; page < address + bytes; page += 4096)
    pages.push_back(reinterpret_cast<void*>(page));
  std::vector<int> status(pages.size(), -1);
  if (syscall(SYS_move_pages, pid, pages.size(), pages.data(), nullptr, status.data(), 0) != 0)
    status.assign(pages.size(), -1000);
  return status;
}

Poco::JSON::Array::Ptr pools_of(const ExecutiveProcess& executive) {
  return Poco::JSON::Parser().parse(executive.get("/api/pools").body).extract<Poco::JSON::Array::Ptr>();
}

struct PoolPlacement {
  bool found = false;
  int numa_node = -2;
  int chunks = 0;
  int chunks_on_node = 0;  // chunks with every page on the node
  std::string where;       // per chunk: the node of all its pages, or how many pages are on which node
};

PoolPlacement placement(const ExecutiveProcess& executive, const std::string& name, int node) {
  PoolPlacement result;
  Poco::JSON::Array::Ptr pools = pools_of(executive);
  for (std::size_t i = 0; pools && i < pools->size(); ++i) {
    Poco::JSON::Object::Ptr pool = pools->getObject(static_cast<unsigned>(i));
    if (pool->getValue<std::string>("name") != name) continue;
    result.found = true;
    result.numa_node = pool->getValue<int>("numa_node");
    Poco::JSON::Array::Ptr chunks = pool->getArray("chunks");
    for (std::size_t c = 0; chunks && c < chunks->size(); ++c) {
      Poco::JSON::Object::Ptr chunk = chunks->getObject(static_cast<unsigned>(c));
      const std::vector<int> nodes = nodes_of_pages(executive.pid(), chunk->getValue<std::uint64_t>("address"),
                                                    chunk->getValue<std::uint64_t>("bytes"));
      std::map<int, int> pages_per_node;
      for (int n : nodes) ++pages_per_node[n];
      ++result.chunks;
      if (pages_per_node.size() == 1 && pages_per_node.begin()->first == node) {
        ++result.chunks_on_node;
        result.where.append(std::to_string(node)).append(" ");
        continue;
      }
      result.where.append("(");
      for (const auto& [n, count] : pages_per_node)
        result.where.append("node ").append(std::to_string(n)).append(": ").append(std::to_string(count)).append(" pages, ");
      result.where.append(") ");
    }
  }
  return result;
}

// The pool says it is bound to `node`, and every page of each of its chunks is there.
void check_pool_on_node(const ExecutiveProcess& executive, const std::string& name, int node) {
  const PoolPlacement p = placement(executive, name, node);
  INFO(name << ": pool says node " << p.numa_node << ", pages of each chunk on nodes " << p.where);
  REQUIRE(p.found);
  CHECK(p.numa_node == node);
  CHECK(p.chunks > 0);
  CHECK(p.chunks_on_node == p.chunks);
}

// The pool of the pong (nton::PingPong instance 1).
std::string application_pool(const ExecutiveProcess& executive) {
  Poco::JSON::Array::Ptr pools = pools_of(executive);
  for (std::size_t i = 0; pools && i < pools->size(); ++i) {
    const std::string name = pools->getObject(static_cast<unsigned>(i))->getValue<std::string>("name");
    if (name.rfind("nton/", 0) == 0) return name;
  }
  return {};
}

using Check = std::function<void(const ExecutiveProcess& pong, const ExecutiveProcess& ping)>;

// 500 ping-pongs of 4 KiB between two executives over ptibv (so that every pool involved has carried frames),
// the pong's endpoint told <numaNode>1</numaNode>; `policy(partition, pong URL)` adds the partition's policy rules.
// `check` runs while both executives still run. Skips unless the run is over ibv on two NUMA nodes.
void ping_pong_on_node_1(const std::string& name,
                         const std::function<void(PartitionBuilder&, const std::string&)>& policy,
                         const Check& check) {
  const TransportProfile& transport = suite_transport();
  if (!transport.capabilities.numa_placement) skip_test("its pools do not follow a numaNode parameter");
  if (numa_nodes() < 2) skip_test("this machine has " + std::to_string(numa_nodes()) + " NUMA node(s); the test needs 2");
  Host a, b;
  PartitionBuilder partition(name);
  policy(partition, a.url());
  NtonContext pong = add_nton_context(partition, transport, a, Traffic::latency);
  pong.endpoint.property("numaNode", "1");
  pong.context.application("nton::PingPong", 2, 1, "data");
  add_nton_context(partition, transport, b, Traffic::latency)
      .context.application("nton::PingPong", 1, 0, "data")
      .properties({{"role", "ping", ""}, {"peer", "2", ""}, {"count", "500", ""}, {"frameSize", "4096", ""}});
  const std::string path = write_file(name + ".xml", partition.xml());
  ExecutiveProcess pong_executive(path, a.url()), ping_executive(path, b.url());
  REQUIRE(pong_executive.wait_ready());
  REQUIRE(ping_executive.wait_ready());
  for (auto* e : {&pong_executive, &ping_executive}) REQUIRE(e->transition("configure").status == 200);
  for (auto* e : {&pong_executive, &ping_executive}) REQUIRE(e->transition("enable").status == 200);
  const bool done = ping_executive.wait_metric(1, "done", 1, std::chrono::seconds(60));
  INFO(ping_executive.output() << pong_executive.output());
  REQUIRE(done);
  CHECK(transport_metric(pong_executive, "numa_node") == 1);
  // The ping's side was told nothing: its pools follow the policy (none matches them), bound to no node.
  CHECK(transport_metric(ping_executive, "numa_node") == -1);
  CHECK(placement(ping_executive, "pt/ibv/recv", 0).numa_node == -1);
  check(pong_executive, ping_executive);
  CHECK(ping_executive.stop() == 0);
  CHECK(pong_executive.stop() == 0);
}

}  // namespace

TEST_CASE("ptibv's pools live on the NUMA node it is told, and an application pool on the node of its policy rule",
          "[transport][process][numa]") {
  // The pong's application pool by the partition's policy; no rule matches ptibv's pools: numaNode decides.
  ping_pong_on_node_1(
      "numa",
      [](PartitionBuilder& partition, const std::string& pong) {
        partition.pool_rule("nton/*", "numa:1", pong);
      },
      [](const ExecutiveProcess& pong, const ExecutiveProcess&) {
        const std::string application = application_pool(pong);
        REQUIRE_FALSE(application.empty());
        for (const std::string& name : {std::string("pt/ibv/recv"), std::string("pt/ibv/credit"), application})
          check_pool_on_node(pong, name, 1);
      });
}

TEST_CASE("without a policy, ptibv's pools follow numaNode and the application's pool stays unbound",
          "[transport][process][numa]") {
  ping_pong_on_node_1(
      "numa-no-policy", [](PartitionBuilder&, const std::string&) {},
      [](const ExecutiveProcess& pong, const ExecutiveProcess&) {
        check_pool_on_node(pong, "pt/ibv/recv", 1);
        check_pool_on_node(pong, "pt/ibv/credit", 1);
        const std::string application = application_pool(pong);
        REQUIRE_FALSE(application.empty());
        CHECK(placement(pong, application, 1).numa_node == -1);  // heap: numaNode is ptibv's own pools only
      });
}

TEST_CASE("a policy rule for ptibv's pools wins over its numaNode parameter", "[transport][process][numa]") {
  ping_pong_on_node_1(
      "numa-rule-wins",
      [](PartitionBuilder& partition, const std::string& pong) {
        partition.pool_rule("pt/ibv/*", "numa:0", pong);
      },
      [](const ExecutiveProcess& pong, const ExecutiveProcess&) {
        check_pool_on_node(pong, "pt/ibv/recv", 0);
        check_pool_on_node(pong, "pt/ibv/credit", 0);
      });
}
