// Reading the RU's parameters into its configuration.
#include "ru/ru_configuration.hpp"

#include <algorithm>
#include <stdexcept>

#include "daqx/apps/text.hpp"
#include "common/dispatch.hpp"

namespace daqx::evb::ru {
using apps::checked_by;
using apps::concatenate;
using apps::param;
using apps::to_text;

namespace {

// Piece headers carry 32-bit sizes: refuse shapes whose typical super-fragment nears 2 GiB (the log-normal tail is
// clamped below it when the configuration is read).
std::string check_super_fragment_size(const ParamSet& p) {
  const std::uint64_t sources = p.unsigned_integer("sources");
  const std::uint64_t mean_size = p.unsigned_integer("fragmentSize");
  const std::uint64_t spread = p.unsigned_integer("fragmentSpread");
  const double typical =
      static_cast<double>(sources) * (static_cast<double>(mean_size) + 6.0 * static_cast<double>(spread) + 64.0);
  if (typical < 1073741824.0) return {};
  return concatenate({"sources x fragmentSize (", to_text(sources), " x ", to_text(mean_size),
                      ") makes super-fragments near the protocol's 2 GiB limit"});
}

}  // namespace

std::vector<ParamSpec> ru_parameters() {
  const RuConfiguration d;
  return {
      param("evm", ParamType::applications, "class:evb::EvM", "", "the event manager"),
      param("bus", ParamType::applications, "class:evb::BU", "", "builder units it sends fragments to, as the EvM assigns events"),
      checked_by(param("sources", ParamType::unsigned_integer, to_text(std::uint64_t{d.shape.sources}), "",
                       "data sources (FEDs) per super-fragment (with fragmentSize, below 1 GiB per super-fragment)", 1,
                       4096),
                 check_super_fragment_size),
      param("fragmentSize", ParamType::unsigned_integer, to_text(std::uint64_t{d.shape.mean_size}), "bytes",
            "mean payload bytes per source fragment", 0, 1 << 24),
      param("fragmentSpread", ParamType::unsigned_integer, to_text(std::uint64_t{d.shape.spread}), "bytes",
            "standard deviation of the source fragment size (log-normal); 0: fixed size", 0, 1 << 24),
      param("pattern", ParamType::boolean, to_text(d.shape.pattern), "",
            "fill payloads with a pattern and a CRC-32C the BU verifies; false: headers and trailers only"),
      param("blockSize", ParamType::unsigned_integer, to_text(std::uint64_t{d.block_size}), "bytes",
            "bytes per block sent to a BU", 4096, 1 << 20),
      readout::blocks_per_send_parameter(),
      param("heartbeatInterval", ParamType::real, to_text(d.heartbeat_interval), "s",
            "time between status reports to the EvM", 0.005, 60),
      param("evmTimeout", ParamType::real, to_text(d.evm_timeout), "s",
            "EvM silence after which this unit fails (the EvM is presumed dead)", 0.05, 3600),
  };
}

RuConfiguration read_ru_configuration(const ParamSet& p, Tid self) {
  RuConfiguration c;
  c.evm = exactly_one(p, "evm");
  c.shape.sources = static_cast<std::uint32_t>(p.unsigned_integer("sources"));
  c.shape.mean_size = static_cast<std::uint32_t>(p.unsigned_integer("fragmentSize"));
  c.shape.spread = static_cast<std::uint32_t>(p.unsigned_integer("fragmentSpread"));
  c.shape.pattern = p.boolean("pattern");
  c.shape.seed = self;
  c.block_size = p.unsigned_integer("blockSize");
  c.blocks_per_send = p.unsigned_integer("blocksPerSend");
  // The typical super-fragment is below 1 GiB (check_super_fragment_size); the log-normal tail is clamped so that
  // no super-fragment reaches the 32-bit sizes of piece headers.
  c.shape.max_size = std::min<std::uint32_t>(c.shape.max_size, 2147483647u / c.shape.sources - 64);
  c.heartbeat_interval = p.real("heartbeatInterval");
  c.evm_timeout = p.real("evmTimeout");
  return c;
}

}  // namespace daqx::evb::ru
