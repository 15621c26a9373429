// The EvM's configuration: one struct, every field with its default, the parameters that set it, and reading them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "daqx/api/application.hpp"
#include "evm/ru_failure_policy.hpp"
#include "format/fragment_format.hpp"
#include "readout/fragment_pump.hpp"

namespace daqx::evb::evm {

struct EvmConfiguration {
  std::vector<Tid> bus;                 // builder units, from the "bus" selector
  std::vector<Tid> rus;                 // readout units, from the "rus" selector
  std::uint32_t events_per_request = 0; // events per resource slot (batch); 0: sized in bytes (batch_bytes)
  std::uint64_t batch_bytes = 2u << 20; // sized batches: about this many event bytes per batch, all RUs'
  std::uint32_t min_events_per_request = 8;     // bounds of a sized batch
  std::uint32_t max_events_per_request = 4096;
  double trigger_rate = 0;              // events per second; 0: as fast as the BUs ask
  double batch_wait = 0.01;             // s an event waits for a full batch before a smaller one goes (slow trigger)
  std::uint64_t max_events = 0;         // events to assign in the run, then stop assigning; 0: no limit
  FragmentShape trigger{1, 1024, 0, 1u << 24, true, 0};  // the EvM's own fragment: one source, 1 KiB
  std::size_t block_size = 65536;       // bytes per fragment block
  std::size_t blocks_per_send = readout::kDefaultBlocksPerSend;  // blocks for one BU per batch send
  double bu_timeout = 1.0;              // s without a request before a BU is dropped
  double ru_timeout = 5.0;              // s without a status before an RU is declared down (it fails the run: be patient)
  double heartbeat_interval = 0.1;      // s between the EvM's heartbeats
  double drain_timeout = 5;             // s stop() waits for the BUs to finish the assigned events
  RuFailurePolicy ru_failure = RuFailurePolicy::fail;
};

// The EvM's parameters, each with its default, bounds and help.
std::vector<ParamSpec> evm_parameters();

// The configuration the parameters give; `self` seeds the trigger fragment's pattern. Throws on a bad value.
EvmConfiguration read_evm_configuration(const ParamSet& p, Tid self);

}  // namespace daqx::evb::evm
