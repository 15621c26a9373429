// What the in-process tests of the event builder's units (and the units benchmark) need besides the context:
// TIDs for many fake peers, the parameters of a BU, an RU or an EvM naming them, the payloads peers send, and a
// counter read from a unit's report.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "bu/bu.hpp"
#include "daqx/api/application.hpp"
#include "daqx/evb/protocol.hpp"
#include "evm/evm.hpp"
#include "ru/ru.hpp"

namespace daqx::evb::test {

// The EvM's TID and the run of the in-process tests, and the generation a BU takes from its first reset in that run
// (the EvM's rule: the run in the high half, 1 in the low).
inline constexpr Tid kEvm = 10;
inline constexpr std::uint32_t kRun = 1;
inline constexpr std::uint32_t kGeneration = (kRun << 16) | 1;

// n TIDs from first.
inline std::vector<Tid> tids(Tid first, std::size_t n) {
  std::vector<Tid> out(n);
  for (std::size_t i = 0; i < n; ++i) out[i] = first + static_cast<Tid>(i);
  return out;
}

inline void set(ParamSet& params, std::string_view name, const std::string& value) {
  if (const std::string refused = params.set(name, value); !refused.empty()) throw std::invalid_argument(refused);
}

inline ParamSet bu_params(Tid evm, const std::vector<Tid>& rus, std::uint32_t slots) {
  ParamSet p(bu::BU::parameters());
  p.set_resolved("evm", {evm});
  p.set_resolved("rus", rus);
  set(p, "slots", std::to_string(slots));
  return p;
}

// Small super-fragments (two sources of 48 bytes): a block holds many events.
inline ParamSet ru_params(Tid evm) {
  ParamSet p(ru::RU::parameters());
  p.set_resolved("evm", {evm});
  set(p, "sources", "2");
  set(p, "fragmentSize", "48");
  set(p, "fragmentSpread", "0");
  return p;
}

// Batches of a fixed count; the trigger fragment small (its blocks are counted, not the point).
inline ParamSet evm_params(const std::vector<Tid>& bus, const std::vector<Tid>& rus, std::uint32_t events_per_request,
                           std::uint64_t max_events) {
  ParamSet p(evm::EvM::parameters());
  p.set_resolved("bus", bus);
  p.set_resolved("rus", rus);
  set(p, "eventsPerRequest", std::to_string(events_per_request));
  set(p, "maxEvents", std::to_string(max_events));
  set(p, "triggerSize", "64");
  return p;
}

template <class Message>
std::vector<std::byte> payload(const Message& m, std::size_t room) {
  std::vector<std::byte> out(room);
  const std::optional<std::size_t> used = encode(m, out.data(), out.size());
  if (!used) throw std::logic_error("payload: the message did not encode");
  out.resize(*used);
  return out;
}
inline std::vector<std::byte> control_payload(const Control& c) { return payload(c, control_bytes(c)); }
inline std::vector<std::byte> request_payload(const Request& r) { return payload(r, request_bytes(r)); }
inline std::vector<std::byte> ru_status_payload(const RuStatus& s) { return payload(s, 64); }
inline std::vector<std::byte> allocate_payload(const Allocate& a) {
  return payload(a, 8 + kAssignmentBytes * a.assignments.size());
}

// A counter or gauge of the unit's report (unlabelled), -1 when it reports none of that name.
inline double metric(const Application& unit, const std::string& name) {
  MetricSink sink;
  unit.report(sink);
  for (const Metric& m : sink.metrics())
    if (m.name == name && m.labels.empty()) return m.value;
  return -1;
}

}  // namespace daqx::evb::test
