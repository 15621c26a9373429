// The event builder that the launcher's cluster tests run (2 RUs x 2 BUs and the EvM, one unit per simulated
// host, every event's content checked), and what those tests look at: the executives left on a host, the pid of
// the executive a context log names, the run's counters in the launcher's summary.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "launcher_process.hpp"
#include "netns.hpp"
#include "partition_builder.hpp"

namespace daqx::test {

inline constexpr int kClusterEvbHosts = 5;  // the EvM on host 0, RUs on 1-2, BUs on 3-4
// Below the hosts' ephemeral port range (32768-60999), as daqx-launch's plan asks of every listening port.
inline constexpr std::uint16_t kClusterEvbControlPort = 29600;
inline constexpr std::uint32_t kClusterEvm = 10, kClusterBu1 = 201;  // the EvM's and the second BU's TIDs

// Writes the partition (scratch/NAME.xml) made by evb_partition.py for the cluster's hosts, with what `extend`
// adds to it (e.g. a <Launch> and a <Control> element) after its contexts. Fails the test if the generator fails.
std::string cluster_evb_partition(const VirtualCluster& cluster, const std::string& name,
                                  const std::function<void(PartitionBuilder&)>& extend);

// <Launch engine=ENGINE> with <Host pattern="*"> setting DAQX_MODULE_PATH of this build: set on every host
// through the partition, as a user sets a per-host environment. Returns the partition, for more launch rules.
PartitionBuilder& launch_through(PartitionBuilder& partition, const std::string& engine);

// The daqx-executive processes running in host's namespace ("pid: command line").
std::vector<std::string> executives_on(const VirtualCluster& cluster, int host);

// The log file the launcher keeps for the context on `host` of the cluster event builder.
std::string cluster_evb_log(const VirtualCluster& cluster, const std::string& log_dir, int host);

// Checks the launcher's summary of a cluster event-builder run that nothing disturbed: every assigned event
// completed and built once, none lost, corrupt or incomplete.
void check_undisturbed_run(const LauncherProcess& launcher);

// Runs the supervision scenario against a launched cluster event builder whose second BU (host 4) restarts on
// failure: waits until that BU builds, kills its executive with SIGKILL, waits until the EvM has taken the
// restarted one back and it builds again, ends the run (the launcher's orderly stop, as on Ctrl-C: its --run is
// only a bound), waits for the launcher to end, and checks the launcher's output:
// the BU came back, one restart was counted, and built + lost + incomplete = assigned.
void check_bu_killed_and_readmitted(LauncherProcess& launcher, const VirtualCluster& cluster, const std::string& log_dir);

}  // namespace daqx::test
