// Partitions for the transport suite, written for the transport of the run.
#include "suite.hpp"

#include <catch2/catch.hpp>

namespace daqx::test {

const TransportProfile& suite_transport() {
  return transport_profile_if_built();
}

NtonContext add_nton_context(PartitionBuilder& partition, const TransportProfile& transport, const Host& host,
                             Traffic traffic) {
  ContextBuilder context = partition.context(host.url());
  PropertiesBuilder endpoint = transport.add_endpoint(context, host.data, traffic);
  context.module(transport.module).module("libdaqx_nton.so");
  return {context, endpoint};
}

void bring_up(const std::vector<ExecutiveProcess*>& executives) {
  for (ExecutiveProcess* e : executives) REQUIRE(e->wait_ready());
  for (ExecutiveProcess* e : executives) REQUIRE(e->transition("configure").status == 200);
  for (ExecutiveProcess* e : executives) REQUIRE(e->transition("enable").status == 200);
}

void stop_and_check_drained(ExecutiveProcess& sender, ExecutiveProcess& receiver, const TransportProfile& transport) {
  for (ExecutiveProcess* e : {&sender, &receiver}) CHECK(e->transition("stop").status == 200);
  CHECK(wait_until([&] {
    return pool_blocks_used(receiver, transport.receive_pool) == receive_blocks_at_rest(receiver, transport);
  }));
  CHECK(wait_until([&] { return pool_blocks_used(receiver, "nton/receiver/0/pool") == 0; }));
  CHECK(wait_until([&] { return pool_blocks_used(sender, "nton/sender/0/pool") == 0; }));
  CHECK(sender.stop() == 0);
  CHECK(receiver.stop() == 0);
}

}  // namespace daqx::test
