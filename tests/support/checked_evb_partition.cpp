// The checked event builder's partition for a simulated cluster, from the generator users run.
#include "checked_evb_partition.hpp"

#include <chrono>
#include <stdexcept>

#include "executive_process.hpp"
#include "process.hpp"

namespace daqx::test {

std::string checked_evb_partition(const VirtualCluster& cluster, int rus, int bus, std::uint16_t control_port,
                                  const std::string& name) {
  std::string hosts;
  for (int h = 0; h < 1 + rus + bus; ++h) hosts.append(h == 0 ? "" : ",").append(cluster.address(h));
  const std::string path = scratch_directory() + "/" + name + ".xml";
  const ProcessResult generated = run_process(
      {"/usr/bin/env", "python3", config_directory() + "/../apps/evb/tools/evb_partition.py", "--rus",
       std::to_string(rus), "--bus", std::to_string(bus), "--hosts", hosts, "--base-port",
       std::to_string(control_port), "--fragment-size", "2048", "--fragment-spread", "1024", "--sources",
       std::to_string(rus), "--slots", "8", "--check-data", "true", "--pattern", "true", "--name", name, "-o", path},
      std::chrono::seconds(10));
  if (generated.exit_code != 0)
    throw std::runtime_error("evb_partition.py: " + outcome(generated) + ": " + generated.output);
  return path;
}

}  // namespace daqx::test
