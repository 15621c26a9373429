// The partition as it is sent to other hosts: paths the partition gives relative to its own folder (module
// paths with a '/', the <Control> token, certificate, key and CA files) made absolute, so that the copy,
// wherever it lands on the host, still names the same files (a shared or identically laid-out install).
#pragma once

#include <string>

namespace daqx::launch {

// The text of the partition at `path` with its relative paths made absolute against its folder. Throws
// LaunchError when it cannot be read.
std::string partition_for_hosts(const std::string& path);

}  // namespace daqx::launch
