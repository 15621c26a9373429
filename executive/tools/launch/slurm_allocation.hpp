// What the launcher needs to know of the Slurm allocation it runs in, asked of Slurm's own commands
// (scontrol): the job, its nodes and their addresses, and which node a context's host names.
#pragma once

#include <string>
#include <vector>

#include "daqx/executive/partition.hpp"

namespace daqx::launch {

struct SlurmNode {
  std::string name;       // NodeName
  std::string address;    // NodeAddr
  std::string host_name;  // NodeHostName
};

struct SlurmAllocation {
  std::string job_id;
  std::vector<SlurmNode> nodes;  // in the allocation's order

  // The node a context's host designates: its NodeName, NodeHostName or NodeAddr, or a name that resolves to
  // the same address as one of these. Null when the host is none of the allocation's nodes.
  const SlurmNode* node_for_host(const std::string& host) const;
};

// Reads SLURM_JOB_ID and SLURM_JOB_NODELIST and asks scontrol about each node. Throws LaunchError outside an
// allocation (saying how to get one) or when scontrol fails.
SlurmAllocation current_allocation();

// "Placed by Slurm": the i-th distinct host of the partition goes to the i-th node of the allocation, and
// every mention of the host (context URLs, endpoint host names, policy contexts) is rewritten to the node's
// address. Writes the result to `output_path`; returns the mapping, host -> node, for the launcher to report.
// Throws LaunchError when the partition has more hosts than the allocation has nodes.
std::vector<std::pair<std::string, SlurmNode>> place_on_allocation(const std::string& partition_path,
                                                                    const config::Partition& partition,
                                                                    const SlurmAllocation& allocation,
                                                                    const std::string& output_path);

// The batch script that runs the partition through Slurm with this launcher: one node per distinct host, one
// task per context, then `daqx-launch --engine slurm` with `launcher_arguments`. `sbatch_options` are added
// as #SBATCH lines (e.g. --time=1:00:00, --partition=daq).
std::string sbatch_script(const config::Partition& partition, const std::string& launcher,
                          const std::vector<std::string>& launcher_arguments,
                          const std::vector<std::string>& sbatch_options);

}  // namespace daqx::launch
