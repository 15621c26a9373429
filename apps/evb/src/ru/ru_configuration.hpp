// The RU's configuration: one struct, every field with its default, the parameters that set it, and reading them.
#pragma once

#include <cstddef>
#include <vector>

#include "daqx/api/application.hpp"
#include "format/fragment_format.hpp"
#include "readout/fragment_pump.hpp"

namespace daqx::evb::ru {

struct RuConfiguration {
  Tid evm = kNoTid;                 // from the "evm" selector
  FragmentShape shape;              // sources, sizes, pattern
  std::size_t block_size = 65536;   // bytes per block sent to a BU
  std::size_t blocks_per_send = readout::kDefaultBlocksPerSend;  // blocks for one BU per batch send
  double heartbeat_interval = 0.1;  // s between status reports to the EvM
  double evm_timeout = 5.0;         // s of EvM silence after which this unit fails
};

// The RU's parameters, each with its default, bounds and help.
std::vector<ParamSpec> ru_parameters();

// The configuration the parameters give; `self` seeds the synthetic data. Throws on a shape the protocol cannot carry.
RuConfiguration read_ru_configuration(const ParamSet& p, Tid self);

}  // namespace daqx::evb::ru
