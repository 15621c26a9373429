// What every test of the transport suite shares: the transport it runs over (DAQX_TRANSPORT), and partitions
// of nton applications whose endpoints are that transport's.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "../support/executive_metrics.hpp"
#include "../support/executive_process.hpp"
#include "../support/transport_profile.hpp"

namespace daqx::test {

// The profile of this run; skips the calling test when its module is not built. First line of every test.
const TransportProfile& suite_transport();

// One executive's addresses: control on 127.0.0.1, data on the profile's host.
struct Host {
  std::uint16_t control = free_port();
  std::uint16_t data = free_port();
  std::string url() const { return "http://127.0.0.1:" + std::to_string(control); }
};

// A context added to a partition being built, with one endpoint of the profile's transport, its module and the
// nton module: the caller adds the applications, and may add endpoint properties.
struct NtonContext {
  ContextBuilder context;
  PropertiesBuilder endpoint;
};
NtonContext add_nton_context(PartitionBuilder& partition, const TransportProfile& transport, const Host& host,
                             Traffic traffic);

// Waits until every executive answers, then configures and enables them in the order given (receivers first).
void bring_up(const std::vector<ExecutiveProcess*>& executives);
// Stops a one-sender, one-receiver nton run and checks that everything went back: the receiver's transport
// pool to what its open connections keep posted, both applications' pools to nothing; the executives exit 0.
void stop_and_check_drained(ExecutiveProcess& sender, ExecutiveProcess& receiver, const TransportProfile& transport);

}  // namespace daqx::test
