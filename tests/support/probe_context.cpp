// The probe partition and its executive.
#include "probe_context.hpp"

#include <stdexcept>

namespace daqx::test {

std::string probe_partition(const std::string& name, std::uint16_t control_port,
                            const PartitionProperties& properties) {
  PartitionBuilder partition(name);
  ContextBuilder context = partition.context("http://127.0.0.1:" + std::to_string(control_port));
  context.module("libdaqx_test_probe.so");
  context.application("test::Probe", 1).properties(properties);
  context.application("test::Probe", 2, 1);
  return partition.xml();
}

ProbeContext::ProbeContext(const std::string& name, const PartitionProperties& properties)
    : port(free_port()),
      executive(write_file(name + ".xml", probe_partition(name, port, properties)),
                "http://127.0.0.1:" + std::to_string(port)) {
  if (!executive.wait_ready()) throw std::runtime_error("the executive did not get ready:\n" + executive.output());
}

}  // namespace daqx::test
