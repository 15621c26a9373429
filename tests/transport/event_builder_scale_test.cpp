// Transport suite, event building at scale: a partition of 129 executives with default parameters builds every
// event with connections only where units send and receive memory that does not grow with the peers; a
// receive pool too small for recvDepth buffers on every incoming connection still builds every event.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "../support/evb_run.hpp"
#include "suite.hpp"

using namespace daqx::test;

namespace {

// The connection plan an executive shows for its endpoint (/api/transports "plan") and its outgoing connections.
struct PlanSeen {
  double outgoing = -1;
  double incoming = -1;
  int outgoing_connections = 0;
};

PlanSeen plan_of(ExecutiveProcess& executive) {
  PlanSeen seen;
  const Poco::JSON::Array::Ptr transports = get_array(executive, "/api/transports");
  for (std::size_t t = 0; transports && t < transports->size(); ++t) {
    const Poco::JSON::Object::Ptr transport = transports->getObject(static_cast<unsigned>(t));
    const Poco::JSON::Object::Ptr plan = transport->getObject("plan");
    if (plan) {
      seen.outgoing = plan->getValue<double>("outgoing");
      seen.incoming = plan->getValue<double>("incoming");
    }
    const Poco::JSON::Array::Ptr connections = transport->getArray("connections");
    for (std::size_t c = 0; connections && c < connections->size(); ++c)
      if (connections->getObject(static_cast<unsigned>(c))->getValue<bool>("outgoing")) ++seen.outgoing_connections;
  }
  return seen;
}

// Every event of the run built once, checked, nothing lost; each RU sent every event's fragment.
void check_every_event(EvbRun& run, const std::vector<std::uint32_t>& rus, const std::vector<std::uint32_t>& bus,
                       double events) {
  CHECK(run.metric(kEvm, "events_assigned") == events);
  CHECK(run.metric(kEvm, "events_lost") == 0);
  CHECK(run.metric(kEvm, "unexpected_discards") == 0);
  CHECK(run.sum(bus, "events_built") == events);
  for (std::uint32_t b : bus) {
    INFO("BU " << b);
    CHECK(run.metric(b, "events_corrupt") == 0);
    CHECK(run.metric(b, "events_incomplete") == 0);
    CHECK(run.metric(b, "duplicate_pieces") == 0);
    CHECK(run.metric(b, "protocol_errors") == 0);
    CHECK(run.metric(b, "fragments_received") == run.metric(b, "events_built") * static_cast<double>(rus.size() + 1));
  }
  for (std::uint32_t r : rus) {
    INFO("RU " << r);
    CHECK(run.metric(r, "fragments_sent") == events);
  }
}

// No connection refused, none left without a receive buffer, on any unit.
void check_no_starved_connection(EvbRun& run) {
  for (std::uint32_t tid : run.tids()) {
    INFO("unit " << tid);
    CHECK(transport_metric(run.process(tid), "connections_over_limit") == 0);
    const double starved = transport_metric(run.process(tid), "connections_starved");
    CHECK((std::isnan(starved) || starved == 0));
  }
}

// Every block back once the run is stopped: the senders' pools empty, the BUs' receive pools at rest.
void check_pools_back(EvbRun& run, const std::vector<std::uint32_t>& rus, const std::vector<std::uint32_t>& bus) {
  for (std::uint32_t r : rus) CHECK(run.pool_empty(r, "evb/"));
  CHECK(run.pool_empty(kEvm, "evb/"));
  for (std::uint32_t b : bus) CHECK(run.receive_pool_at_rest(b));
}

std::vector<std::uint32_t> units(std::uint32_t (*tid)(int), int count) {
  std::vector<std::uint32_t> list;
  for (int i = 0; i < count; ++i) list.push_back(tid(i));
  return list;
}

}  // namespace

TEST_CASE("64x64 with default parameters connects only where units send, builds every assigned event exactly once, "
          "and gives every block back",
          "[transport][process][evb][scale]") {
  const TransportProfile& transport = suite_transport();
  constexpr int kUnits = 64;
  constexpr double kEvents = 4096;
  // A low trigger rate and small fragments: this is about how many, not how fast. A generous BU timeout: 129
  // executives on two busy cores answer heartbeats late.
  EvbRun run(transport, "evb-64x64", kUnits, kUnits,
             {{"maxEvents", "4096", "unsigned"}, {"triggerRate", "1000", "double"}, {"buTimeout", "60", ""}},
             {{"fragmentSize", "256", "unsigned"}, {"fragmentSpread", "0", "unsigned"}, {"evmTimeout", "60", ""}},
             {{"evmTimeout", "60", ""}});
  const std::vector<std::uint32_t> rus = units(ru, kUnits);
  const std::vector<std::uint32_t> bus = units(bu, kUnits);

  // The plan: an RU connects to the 64 BUs and the EvM, a BU to the EvM only, the EvM to every unit; a BU
  // expects the 64 RUs and the EvM. Not every context to every other (128 each).
  const PlanSeen ru_plan = plan_of(run.process(ru(0)));
  CHECK(ru_plan.outgoing == kUnits + 1);
  CHECK(ru_plan.outgoing_connections == kUnits + 1);
  CHECK(ru_plan.incoming == 1);
  const PlanSeen bu_plan = plan_of(run.process(bu(0)));
  CHECK(bu_plan.outgoing == 1);
  CHECK(bu_plan.outgoing_connections == 1);
  CHECK(bu_plan.incoming == kUnits + 1);
  const PlanSeen evm_plan = plan_of(run.process(kEvm));
  CHECK(evm_plan.outgoing == 2 * kUnits);
  CHECK(evm_plan.incoming == 2 * kUnits);
  // ptofi reserves sendDepth + 8 entries per outgoing endpoint in send completion queues of 8192: the EvM's 128
  // endpoints (136 entries each at the defaults) need three.
  if (transport.protocol == "ofi") CHECK(transport_metric(run.process(kEvm), "send_completion_queues") >= 2);

  run.start_run();
  run.require_progress(kEvm, "events_completed", kEvents);
  run.stop_run();
  check_every_event(run, rus, bus, kEvents);
  check_no_starved_connection(run);
  // Still only the planned connections: nothing was opened at first use.
  CHECK(plan_of(run.process(ru(kUnits - 1))).outgoing_connections == kUnits + 1);
  CHECK(plan_of(run.process(bu(kUnits - 1))).outgoing_connections == 1);
  check_pools_back(run, rus, bus);
  run.finish();
}

TEST_CASE("4x2 whose receive pools hold recvDepth buffers for two incoming connections, not for their five, "
          "builds every event: the connections share the pool and none is left without credit",
          "[transport][process][evb][scale-small]") {
  const TransportProfile& transport = suite_transport();
  constexpr int kRus = 4;
  constexpr int kBus = 2;
  const std::uint64_t max_events = transport.work(5000);
  const auto events = static_cast<double>(max_events);
  // recvDepth (64) x recvBufferSize (128 KiB) is 8 MiB per incoming connection; a BU has five (4 RUs, the EvM),
  // the EvM six. A pool of 16 MiB gave the first two every buffer and the others none.
  PartitionProperties endpoint;
  if (transport.capabilities.posted_receive_buffers) endpoint.push_back({"recvPoolSize", "16777216", "unsigned"});
  EvbRun run(transport, "evb-4x2-small-pools", kRus, kBus,
             {{"maxEvents", std::to_string(max_events), "unsigned"}, {"buTimeout", "30", ""}},
             {{"fragmentSize", "1024", "unsigned"}, {"evmTimeout", "30", ""}},
             // What the slots may hold stays below the three quarters of the pool the budget leaves to received frames.
             {{"memoryBudget", "6291456", "unsigned"}, {"evmTimeout", "30", ""}}, endpoint);
  const std::vector<std::uint32_t> rus = units(ru, kRus);
  const std::vector<std::uint32_t> bus = units(bu, kBus);
  run.start_run();
  run.require_progress(kEvm, "events_completed", events);
  run.stop_run();
  check_every_event(run, rus, bus, events);
  check_no_starved_connection(run);
  if (transport.capabilities.posted_receive_buffers) {
    // The budget (a quarter of 16 MiB in 128 KiB buffers) shared by the BU's five connections.
    CHECK(transport_metric(run.process(bu(0)), "receive_budget") == 32);
    CHECK(transport_metric(run.process(bu(0)), "receive_depth_per_connection") <= 32 / (kRus + 1));
  }
  check_pools_back(run, rus, bus);
  run.finish();
}

TEST_CASE("4x2 whose send depth lets a send completion queue hold two connections builds every event over several "
          "completion queues",
          "[transport][process][evb][scale-small]") {
  const TransportProfile& transport = suite_transport();
  // ptibv reserves sendDepth + 8 entries of a send completion queue per outgoing connection; a queue has
  // min(max_cqe, 65536) entries (32767 on soft-RoCE). At sendDepth 16000 a queue holds at most four connections
  // and the EvM has six (4 RUs, 2 BUs): it needs more than one queue.
  if (transport.protocol != "ibv") skip_test("its completion queues are not reserved per connection");
  constexpr int kRus = 4;
  constexpr int kBus = 2;
  const std::uint64_t max_events = transport.work(2000);
  const auto events = static_cast<double>(max_events);
  EvbRun run(transport, "evb-4x2-deep-sends", kRus, kBus,
             {{"maxEvents", std::to_string(max_events), "unsigned"}, {"buTimeout", "30", ""}},
             {{"fragmentSize", "1024", "unsigned"}, {"evmTimeout", "30", ""}}, {{"evmTimeout", "30", ""}},
             {{"sendDepth", "16000", "unsigned"}});
  const std::vector<std::uint32_t> rus = units(ru, kRus);
  const std::vector<std::uint32_t> bus = units(bu, kBus);
  CHECK(plan_of(run.process(kEvm)).outgoing_connections == kRus + kBus);
  CHECK(transport_metric(run.process(kEvm), "send_completion_queues") >= 2);
  run.start_run();
  run.require_progress(kEvm, "events_completed", events);
  run.stop_run();
  check_every_event(run, rus, bus, events);
  check_no_starved_connection(run);
  CHECK(transport_metric(run.process(kEvm), "completion_errors") == 0);
  check_pools_back(run, rus, bus);
  run.finish();
}
