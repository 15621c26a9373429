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
#include <string>

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

// The node of one page of another process (move_pages with no target nodes only asks); -errno when unknown.
int node_of_page(pid_t pid, std::uint64_t address) {
  void* page = reinterpret_cast<void*>(address & ~std::uint64_t{4095});
  int status = -1;
  if (syscall(SYS_move_pages, pid, 1UL, &page, nullptr, &status, 0) != 0) return -1000;
  return status;
}

struct PoolPlacement {
  bool found = false;
  int numa_node = -2;
  int chunks = 0;
  int pages_on_node = 0;
  std::string where;  // every page's node, for the message
};

PoolPlacement placement(const ExecutiveProcess& executive, const std::string& name, int node) {
  PoolPlacement result;
  Poco::JSON::Array::Ptr pools =
      Poco::JSON::Parser().parse(executive.get("/api/pools").body).extract<Poco::JSON::Array::Ptr>();
  for (std::size_t i = 0; pools && i < pools->size(); ++i) {
    Poco::JSON::Object::Ptr pool = pools->getObject(static_cast<unsigned>(i));
    if (pool->getValue<std::string>("name") != name) continue;
    result.found = true;
    result.numa_node = pool->getValue<int>("numa_node");
    Poco::JSON::Array::Ptr chunks = pool->getArray("chunks");
    for (std::size_t c = 0; chunks && c < chunks->size(); ++c) {
      Poco::JSON::Object::Ptr chunk = chunks->getObject(static_cast<unsigned>(c));
      const auto address = chunk->getValue<std::uint64_t>("address");
      const int where = node_of_page(executive.pid(), address);
      ++result.chunks;
      result.pages_on_node += where == node ? 1 : 0;
      result.where.append(std::to_string(where)).append(" ");
    }
  }
  return result;
}

}  // namespace

TEST_CASE("ptibv's pools live on the NUMA node it is told, and an application pool on the node of its policy rule",
          "[transport][process][numa]") {
  const TransportProfile& transport = suite_transport();
  if (transport.protocol != "ibv") skip_test("the NUMA placement test is ptibv's (numaNode parameter)");
  if (numa_nodes() < 2) skip_test("this machine has " + std::to_string(numa_nodes()) + " NUMA node(s); the test needs 2");
  Host a, b;
  std::string pong = nton_context(transport, a, Traffic::latency, application_xml("nton::PingPong", 2, 1));
  const std::string end_of_properties = "</Properties></Endpoint>";
  pong.replace(pong.find(end_of_properties), end_of_properties.size(), "<numaNode>1</numaNode>" + end_of_properties);
  std::string xml = partition_xml("numa", {
      pong, nton_context(transport, b, Traffic::latency, application_xml("nton::PingPong", 1, 0,
          "<role>ping</role><peer>2</peer><count>500</count><frameSize>4096</frameSize>"))});
  // The pong's application pool by the partition's policy; ptibv's pools have no rule: numaNode decides.
  const std::string policy = "  <Policy>\n    <Pool pattern=\"nton/*\" allocator=\"numa:1\" context=\"" + a.url() +
                             "\"/>\n  </Policy>\n";
  xml.insert(xml.find('\n') + 1, policy);
  const std::string path = write_file("numa.xml", xml);
  ExecutiveProcess pong_executive(path, a.url()), ping_executive(path, b.url());
  REQUIRE(pong_executive.wait_ready());
  REQUIRE(ping_executive.wait_ready());
  for (auto* e : {&pong_executive, &ping_executive}) REQUIRE(e->transition("configure").status == 200);
  for (auto* e : {&pong_executive, &ping_executive}) REQUIRE(e->transition("enable").status == 200);
  const bool done = ping_executive.wait_metric(1, "done", 1, std::chrono::seconds(60));
  INFO(ping_executive.output() << pong_executive.output());
  REQUIRE(done);
  CHECK(transport_metric(pong_executive, "numa_node") == 1);

  // Every pool the pong's side uses: ptibv's receive and credit pools, the application's.
  Poco::JSON::Array::Ptr pools =
      Poco::JSON::Parser().parse(pong_executive.get("/api/pools").body).extract<Poco::JSON::Array::Ptr>();
  std::string application_pool;
  for (std::size_t i = 0; pools && i < pools->size(); ++i) {
    const std::string name = pools->getObject(static_cast<unsigned>(i))->getValue<std::string>("name");
    if (name.rfind("nton/", 0) == 0) application_pool = name;
  }
  REQUIRE_FALSE(application_pool.empty());
  for (const std::string& name : {std::string("pt/ibv/recv"), std::string("pt/ibv/credit"), application_pool}) {
    const PoolPlacement p = placement(pong_executive, name, 1);
    INFO(name << ": pool says node " << p.numa_node << ", pages on nodes " << p.where);
    REQUIRE(p.found);
    CHECK(p.numa_node == 1);
    CHECK(p.chunks > 0);
    CHECK(p.pages_on_node == p.chunks);
  }
  // The ping's side was told nothing: its receive pool follows the default allocator, not bound to a node.
  CHECK(transport_metric(ping_executive, "numa_node") == -1);
  CHECK(ping_executive.stop() == 0);
  CHECK(pong_executive.stop() == 0);
}
