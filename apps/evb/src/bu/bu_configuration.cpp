// The BU's parameters and reading them into a BuConfiguration.
#include "bu/bu_configuration.hpp"

#include <stdexcept>

#include "daqx/apps/text.hpp"
#include "common/dispatch.hpp"

namespace daqx::evb::bu {
using apps::checked_by;
using apps::choice_param;
using apps::concatenate;
using apps::param;
using apps::receiving_from;
using apps::to_text;

namespace {

// Slots are offered less from throttleLevel and not at all from blockLevel: blocking before throttling is no order.
std::string check_levels(const ParamSet& p) {
  if (p.real("blockLevel") >= p.real("throttleLevel")) return {};
  return concatenate({"blockLevel (", p.text("blockLevel"), ") is below throttleLevel (", p.text("throttleLevel"), ")"});
}

}  // namespace

std::vector<ParamSpec> bu_parameters() {
  const BuConfiguration d;
  return {
      param("evm", ParamType::applications, "class:evb::EvM", "", "the event manager"),
      receiving_from(param("rus", ParamType::applications, "class:evb::RU", "",
                           "the readout units every event needs a fragment from")),
      param("slots", ParamType::unsigned_integer, to_text(std::uint64_t{d.slots}), "",
            "resource slots: each is a credit for one batch of events", 1, 4096),
      choice_param("output", "discard", "where built events go: discard, file or consumer", {"discard", "file", "consumer"}),
      param("outputDirectory", ParamType::string, "/tmp/daqx-evb", "", "directory for output file"),
      param("fileSize", ParamType::unsigned_integer, to_text(std::uint64_t{d.files.max_file_bytes}), "bytes",
            "output files are closed and a new one opened at this size", 1, static_cast<double>(1ull << 50)),
      param("outputBandwidth", ParamType::real, "0", "MB/s", "output file: write at most this fast (0: no limit)", 0),
      param("consumer", ParamType::string, "", "", "output consumer: the name a downstream application published"),
      param("throttleLevel", ParamType::real, to_text(d.throttle_level), "",
            "fraction of slots waiting for the output at which a quarter of the slots are offered", 0.01, 1),
      checked_by(param("blockLevel", ParamType::real, to_text(d.block_level), "",
                       "fraction of slots waiting for the output at which no slot is offered (not below throttleLevel)",
                       0.01, 1),
                 check_levels),
      param("memoryBudget", ParamType::unsigned_integer, to_text(std::uint64_t{d.memory_budget}), "bytes",
            "received blocks the slots in use may hold; keep below the transport's receive pool", 1 << 20),
      param("checkData", ParamType::boolean, to_text(d.check_data), "",
            "verify each super-fragment's headers, sizes and CRC-32C"),
      param("requestInterval", ParamType::real, to_text(d.request_interval), "s",
            "a request goes at least this often, with or without free slots (liveness)", 0.005, 60),
      param("evmTimeout", ParamType::real, to_text(d.evm_timeout), "s",
            "EvM silence after which this unit fails (the EvM is presumed dead)", 0.05, 3600),
      param("streamBatchInterval", ParamType::real, to_text(d.stream_batch_interval), "s",
            "the stream's records for a sampling subscriber (sample:N, rate:R) go together once a quarter of its "
            "depth waits or the oldest waited this long (0: each at once)",
            0, 1),
  };
}

BuConfiguration read_bu_configuration(const ParamSet& p) {
  BuConfiguration c;
  c.evm = exactly_one(p, "evm");
  c.rus = p.applications("rus");
  c.slots = static_cast<std::uint32_t>(p.unsigned_integer("slots"));
  const std::string& output = p.string("output");
  if (output == "discard") c.output = OutputKind::discard;
  else if (output == "file") c.output = OutputKind::file;
  else if (output == "consumer") c.output = OutputKind::consumer;
  else throw std::runtime_error(concatenate({"output: '", output, "' is none of discard, file, consumer"}));
  c.files.directory = p.string("outputDirectory");
  c.files.max_file_bytes = p.unsigned_integer("fileSize");
  c.files.max_bytes_per_second = p.real("outputBandwidth") * 1e6;
  c.consumer = p.string("consumer");
  c.throttle_level = p.real("throttleLevel");
  c.block_level = p.real("blockLevel");
  c.check_data = p.boolean("checkData");
  c.memory_budget = p.unsigned_integer("memoryBudget");
  c.request_interval = p.real("requestInterval");
  c.evm_timeout = p.real("evmTimeout");
  c.stream_batch_interval = p.real("streamBatchInterval");
  return c;
}

}  // namespace daqx::evb::bu
