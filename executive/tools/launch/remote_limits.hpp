// Asking a context's executive on its host for that host's limits (daqx-executive --host-limits), as the ssh and
// Slurm engines do for the plan before start: the arguments, and the reading of its answer.
#pragma once

#include <string>

#include "daqx/services/host_limits.hpp"
#include "run_command.hpp"

namespace daqx::launch {

inline constexpr const char* kHostLimitsArgument = "--host-limits";

// The limits in the answer's last line; throws LaunchError naming `where` when the command failed or printed
// something else (an executive too old to know --host-limits, a host that cannot be reached).
HostLimits read_host_limits(const CommandResult& answer, const std::string& where);

}  // namespace daqx::launch
