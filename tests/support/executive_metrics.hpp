// What process-level tests read from a running executive beyond its applications: pool occupancy, transport
// counters and parameters; and (wait_until.hpp) waiting for a condition with a bound.
#pragma once

#include <string>

#include "executive_process.hpp"
#include "transport_profile.hpp"
#include "wait_until.hpp"  // the process tests wait with it

namespace daqx::test {

// A JSON array the executive's API answers at `path` (nullptr when it does not answer 200).
Poco::JSON::Array::Ptr get_array(const ExecutiveProcess& executive, const std::string& path);

// An application's metric of the series whose label `label` is `value` (NaN when absent or unreachable), e.g. a
// publisher's subscriber_dropped{subscriber="301"}.
double labelled_metric(const ExecutiveProcess& executive, std::uint32_t tid, const std::string& name,
                       const std::string& label, const std::string& value);

// Blocks in use in the executive's first pool whose name contains `pool` (-1 when there is none).
double pool_blocks_used(const ExecutiveProcess& executive, const std::string& pool);

// A metric of the executive's transports, summed over them (NaN when none reports it or it is unreachable).
double transport_metric(const ExecutiveProcess& executive, const std::string& name);
// A metric of the executive's outgoing connection to the context at `peer_context` (NaN when there is none).
double connection_metric(const ExecutiveProcess& executive, const std::string& peer_context, const std::string& name);
// A parameter of the executive's first transport that has it, as text (empty when none has it).
std::string transport_parameter(const ExecutiveProcess& executive, const std::string& name);

// Blocks of the profile's receive pool in use when no frame is on its way: none, or for a transport that posts
// receive buffers, recvDepth for every incoming connection open now.
double receive_blocks_at_rest(const ExecutiveProcess& executive, const TransportProfile& profile);

// daqx_control_refused_total{reason=...} in a /metrics answer (-1 when the series is not there).
double control_refusals(const HttpReply& metrics, const std::string& reason);

}  // namespace daqx::test
