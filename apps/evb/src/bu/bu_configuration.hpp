// The BU's configuration: one struct whose every field has a default, the parameters that set it, and
// reading them at configure.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "daqx/api/application.hpp"
#include "daqx/evb/protocol.hpp"
#include "files/event_file_writer.hpp"

namespace daqx::evb::bu {

enum class OutputKind { discard, file, consumer };

struct BuConfiguration {
  Tid evm = kNoTid;
  std::vector<Tid> rus;             // contributors besides the EvM, from the "rus" selector
  std::uint32_t slots = 16;         // resource slots, each a credit for one batch of events
  OutputKind output = OutputKind::discard;
  FileOutputConfig files;           // output "file"
  std::string consumer;             // output "consumer": the name a downstream application published
  double throttle_level = 0.5;      // fraction of slots waiting for the output at which fewer are offered
  double block_level = 0.9;         // ... at which none are offered
  bool check_data = true;           // verify every super-fragment's headers and CRCs
  std::uint64_t memory_budget = 128ull << 20;  // received blocks the slots in use may hold (transport pool: 256 MiB)
  double request_interval = 0.1;    // s between requests when nothing else prompts one (liveness)
  double evm_timeout = 5.0;         // s of EvM silence after which this unit fails
  // s a sampling subscriber's records of the stream wait to go as a batch (streams::PublisherOptions): a monitor
  // then wakes once per batch, not per record; 0 sends each at once
  double stream_batch_interval = 0.1;
};

// The BU's parameters, as evb::BU declares them.
std::vector<ParamSpec> bu_parameters();

// The configuration the parameters give. Throws std::runtime_error on values that contradict each other;
// whether the output can be reached (directory, consumer) is for the BU to check.
BuConfiguration read_bu_configuration(const ParamSet& p);

}  // namespace daqx::evb::bu
