// One executive hosting two test::Probe applications (tests/modules/probe_module.cpp) on a control port of its
// own: what the process-level tests of the control port drive.
#pragma once

#include <cstdint>
#include <string>

#include "executive_process.hpp"
#include "partition_builder.hpp"

namespace daqx::test {

// The partition: applications 1 (with `properties`) and 2 in one context at http://127.0.0.1:control_port.
std::string probe_partition(const std::string& name, std::uint16_t control_port,
                            const PartitionProperties& properties = {});

// An executive of the probe partition on a free port, ready (throws, failing the test, when it is not).
struct ProbeContext {
  explicit ProbeContext(const std::string& name, const PartitionProperties& properties = {});
  std::uint16_t port;
  ExecutiveProcess executive;
};

}  // namespace daqx::test
