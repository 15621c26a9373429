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
  PartitionBuilder partition("pinned");
  partition.thread_rule("pt/" + transport.protocol + "/send", std::to_string(send_core))
      .thread_rule("pt/" + transport.protocol + "/recv", std::to_string(receive_core));
  add_nton_context(partition, transport, a, Traffic::latency)
      .context.application("nton::PingPong", 1, 0, "data")
      .property("role", "pong");
  add_nton_context(partition, transport, b, Traffic::latency)
      .context.application("nton::PingPong", 2, 1, "data")
      .properties({{"role", "ping", ""}, {"peer", "1", ""}, {"count", "200", ""}});
  const std::string path = write_file("pinned.xml", partition.xml());
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
