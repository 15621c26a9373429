// Transport suite, threads: the partition's policy pins a transport's completion threads (send and receive)
// like any other thread, and the kernel says so.
#include <Poco/JSON/Array.h>
#include <Poco/JSON/Object.h>
#include <Poco/JSON/Parser.h>
#include <catch2/catch.hpp>
#include <sched.h>

#include <string>
#include <thread>

#include "suite.hpp"

using namespace daqx::test;

namespace {

// The CPUs the kernel lets a thread of this machine run on.
std::vector<int> kernel_affinity(int kernel_tid) {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(kernel_tid, sizeof set, &set) != 0) return {};
  std::vector<int> cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
    if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
  return cpus;
}

}  // namespace

TEST_CASE("the policy pins a transport's send and receive threads, as the kernel reports", "[transport][process]") {
  const TransportProfile& transport = suite_transport();
  const int cpus = static_cast<int>(std::thread::hardware_concurrency());
  const int send_core = 0;
  const int receive_core = cpus - 1;
  Host a, b;
  const std::string contexts =
      nton_context(transport, a, Traffic::latency, application_xml("nton::PingPong", 1, 0, "<role>pong</role>")) +
      nton_context(transport, b, Traffic::latency,
                   application_xml("nton::PingPong", 2, 1, "<role>ping</role><peer>1</peer><count>200</count>"));
  const std::string policy = "  <Policy>\n    <Thread pattern=\"pt/" + transport.protocol + "/send\" cores=\"" +
                             std::to_string(send_core) + "\"/>\n    <Thread pattern=\"pt/" + transport.protocol +
                             "/recv\" cores=\"" + std::to_string(receive_core) + "\"/>\n  </Policy>\n";
  std::string xml = partition_xml("pinned", {contexts});
  xml.insert(xml.find('\n') + 1, policy);
  const std::string path = write_file("pinned.xml", xml);
  ExecutiveProcess pong(path, a.url()), ping(path, b.url());
  // Round trips, so that both threads of both executives have work while they are looked at.
  bring_up({&pong, &ping});
  REQUIRE(ping.wait_metric(2, "done", 1, std::chrono::seconds(60)));

  for (ExecutiveProcess* executive : {&pong, &ping}) {
    const auto threads = Poco::JSON::Parser().parse(executive->get("/api/threads").body).extract<Poco::JSON::Array::Ptr>();
    int pinned = 0;
    for (std::size_t i = 0; i < threads->size(); ++i) {
      const auto thread = threads->getObject(static_cast<unsigned>(i));
      const std::string name = thread->getValue<std::string>("name");
      const bool send = name == "pt/" + transport.protocol + "/send";
      const bool receive = name == "pt/" + transport.protocol + "/recv";
      if (!send && !receive) continue;
      INFO(name << " (kernel thread " << thread->getValue<int>("kernel_tid") << ")");
      // The kernel's word, not the executive's.
      CHECK(kernel_affinity(thread->getValue<int>("kernel_tid")) == std::vector<int>{send ? send_core : receive_core});
      ++pinned;
    }
    CHECK(pinned == 2);
  }
  CHECK(ping.stop() == 0);
  CHECK(pong.stop() == 0);
}
