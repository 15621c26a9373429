// The partition of an event builder spread over a simulated cluster with every event's content checked, as the
// generator users run makes it: shared by the namespace, cluster and soak tests.
#pragma once

#include <cstdint>
#include <string>

#include "netns.hpp"

namespace daqx::test {

// Writes scratch/NAME.xml, made by apps/evb/tools/evb_partition.py for `rus` RUs (one source each) and `bus` BUs,
// one unit per host of the cluster (the EvM on host 0, the RUs on 1..rus, the BUs after them), control ports from
// control_port, 2 KiB fragments (spread 1 KiB), 8 slots per BU, checks on (the RUs write a pattern, the BUs
// verify it and every fragment's CRC). Throws std::runtime_error with the generator's output when it fails.
std::string checked_evb_partition(const VirtualCluster& cluster, int rus, int bus, std::uint16_t control_port,
                                  const std::string& name);

}  // namespace daqx::test
