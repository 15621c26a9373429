#include "partition_poll.hpp"

#include <exception>

#include "daqx/control/context_summary.hpp"

namespace daqx::console {
namespace {

void read_summary(const ContextSummary& summary, ContextSample& sample) {
  sample.run = summary.run;
  for (const UnitSummary& unit : summary.units) {
    UnitSample read;
    read.name = unit.name;
    read.class_name = unit.class_name;
    read.tid = unit.tid;
    read.state = unit.state;
    read.reason = unit.reason;
    read.run = unit.run;
    read.counters = unit.counters;
    if (read.run != 0) sample.run = read.run;
    sample.units.push_back(std::move(read));
  }
  for (const TransportSummary& transport : summary.transports) {
    sample.connections_up += transport.connections_up;
    sample.connections_total += transport.connections_total;
    for (const auto& [name, value] : transport.counters) sample.transport_counters[transport.protocol + " " + name] += value;
    if (const auto starved = transport.gauges.find("connections_starved"); starved != transport.gauges.end())
      sample.connections_starved += starved->second;
  }
  for (const PoolSummary& pool : summary.pools)
    sample.pools.push_back(PoolUse{pool.name, static_cast<double>(pool.bytes_used), static_cast<double>(pool.bytes_total),
                                   static_cast<double>(pool.failed_allocations)});
}

}  // namespace

std::vector<ContextSample> poll_contexts(ContextPoller& poller, const std::vector<std::string>& urls,
                                         std::chrono::milliseconds timeout) {
  std::vector<ContextSample> samples(urls.size());
  for (std::size_t i = 0; i < urls.size(); ++i) samples[i].url = urls[i];
  poller.round(urls, "/api/summary", timeout, [&](std::size_t index, HttpReply reply) {
    ContextSample& sample = samples[index];  // each index is answered once, by one worker
    sample.at = Clock::now();  // the counters were read just before: a request waits its turn, never its answer
    if (!reply.answered()) {
      sample.error = reply.body.empty() ? "no answer" : reply.body;
      return;
    }
    if (reply.status != 200) {
      sample.error = "GET /api/summary answered " + std::to_string(reply.status);
      return;
    }
    try {
      read_summary(parse_context_summary(reply.body), sample);
      sample.answered = true;
    } catch (const std::exception& error) {
      sample.error = error.what();
      sample.units.clear();
    }
  });
  for (ContextSample& sample : samples)
    if (!sample.answered && sample.error.empty()) sample.error = "not asked: the poller stopped";
  return samples;
}

}  // namespace daqx::console
