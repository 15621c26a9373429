// Reading the EvM's parameters into its configuration.
#include "evm/evm_configuration.hpp"

#include <stdexcept>
#include <string>

#include "daqx/apps/text.hpp"

namespace daqx::evb::evm {
using apps::checked_by;
using apps::choice_param;
using apps::concatenate;
using apps::param;
using apps::to_text;

namespace {

// A sized batch between its bounds needs bounds that do not cross.
std::string check_events_per_request(const ParamSet& p) {
  const std::uint64_t min = p.unsigned_integer("minEventsPerRequest");
  const std::uint64_t max = p.unsigned_integer("maxEventsPerRequest");
  if (min <= max) return {};
  return concatenate({"minEventsPerRequest (", to_text(min), ") is above maxEventsPerRequest (", to_text(max), ")"});
}

}  // namespace

std::vector<ParamSpec> evm_parameters() {
  const EvmConfiguration d;
  return {
      param("bus", ParamType::applications, "class:evb::BU", "", "builder units to serve"),
      param("rus", ParamType::applications, "class:evb::RU", "", "readout units to tell where events go"),
      param("eventsPerRequest", ParamType::unsigned_integer, to_text(std::uint64_t{d.events_per_request}), "events",
            "events per BU resource slot (a batch); 0: sized in bytes (batchBytes)", 0, 4096),
      param("batchBytes", ParamType::unsigned_integer, to_text(d.batch_bytes), "bytes",
            "sized batches: about this many bytes of whole events per batch (every RU's and the trigger's share), "
            "from the sizes the RUs report",
            4096, std::uint64_t{1} << 30),
      checked_by(param("minEventsPerRequest", ParamType::unsigned_integer,
                       to_text(std::uint64_t{d.min_events_per_request}), "events",
                       "the fewest events in a sized batch (also the size before the RUs' first report)", 1, 4096),
                 check_events_per_request),
      param("maxEventsPerRequest", ParamType::unsigned_integer, to_text(std::uint64_t{d.max_events_per_request}),
            "events", "the most events in a sized batch", 1, 4096),
      param("triggerRate", ParamType::real, to_text(d.trigger_rate), "Hz",
            "events per second the trigger gives; 0: as fast as the builders ask", 0),
      param("batchWait", ParamType::real, to_text(d.batch_wait), "s",
            "how long an event waits for its batch to fill before a smaller batch is sent (slow trigger)", 0, 60),
      param("maxEvents", ParamType::unsigned_integer, "0", "events",
            "events to assign in a run, then stop assigning; 0: no limit", 0),
      param("triggerSize", ParamType::unsigned_integer, to_text(std::uint64_t{d.trigger.mean_size}), "bytes",
            "payload bytes of the EvM's trigger fragment", 0, 1 << 20),
      param("pattern", ParamType::boolean, to_text(d.trigger.pattern), "",
            "fill the trigger fragment's payload with a pattern and a CRC-32C the BU verifies; false: its header and "
            "trailer only (as an RU's pattern)"),
      param("blockSize", ParamType::unsigned_integer, to_text(std::uint64_t{d.block_size}), "bytes",
            "bytes per fragment block sent to a BU", 4096, 1 << 20),
      readout::blocks_per_send_parameter(),
      param("buTimeout", ParamType::real, to_text(d.bu_timeout), "s",
            "a BU silent this long is dropped and its events counted lost", 0.05, 3600),
      param("ruTimeout", ParamType::real, to_text(d.ru_timeout), "s",
            "an RU silent this long is declared down (see ruFailurePolicy)", 0.05, 3600),
      param("heartbeatInterval", ParamType::real, to_text(d.heartbeat_interval), "s",
            "time between the EvM's heartbeats to every unit", 0.005, 60),
      param("drainTimeout", ParamType::real, to_text(d.drain_timeout), "s",
            "stop waits this long for the builders to finish the assigned events", 0, 3600),
      choice_param("ruFailurePolicy", "fail",
                   "when an RU is down: fail (the run goes to Failed) or incomplete (BUs build without it, flagged)",
                   {"fail", "incomplete"}),
  };
}

EvmConfiguration read_evm_configuration(const ParamSet& p, Tid self) {
  EvmConfiguration c;
  c.bus = p.applications("bus");
  c.rus = p.applications("rus");
  c.events_per_request = static_cast<std::uint32_t>(p.unsigned_integer("eventsPerRequest"));
  c.batch_bytes = p.unsigned_integer("batchBytes");
  c.min_events_per_request = static_cast<std::uint32_t>(p.unsigned_integer("minEventsPerRequest"));
  c.max_events_per_request = static_cast<std::uint32_t>(p.unsigned_integer("maxEventsPerRequest"));  // checked
  c.trigger_rate = p.real("triggerRate");
  c.batch_wait = p.real("batchWait");
  c.max_events = p.unsigned_integer("maxEvents");
  c.trigger.sources = 1;
  c.trigger.mean_size = static_cast<std::uint32_t>(p.unsigned_integer("triggerSize"));
  c.trigger.spread = 0;
  c.trigger.pattern = p.boolean("pattern");
  c.trigger.seed = self;
  c.block_size = p.unsigned_integer("blockSize");
  c.blocks_per_send = p.unsigned_integer("blocksPerSend");
  c.bu_timeout = p.real("buTimeout");
  c.ru_timeout = p.real("ruTimeout");
  c.heartbeat_interval = p.real("heartbeatInterval");
  c.drain_timeout = p.real("drainTimeout");
  c.ru_failure = parse_ru_failure_policy(p.string("ruFailurePolicy"));
  if (c.bus.empty()) throw std::runtime_error(concatenate({"bus: '", p.text("bus"), "' selects no application"}));
  return c;
}

}  // namespace daqx::evb::evm
