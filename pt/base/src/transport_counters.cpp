// The transports' counters as rows of a connection table.
#include "daqx/pt/transport_counters.hpp"

namespace daqx::pt {

void add_metrics(std::vector<Metric>& metrics, const CounterSet& counters) {
  MetricSink sink;
  counters.report(sink);
  for (const Metric& metric : sink.metrics()) metrics.push_back(metric);
}

}  // namespace daqx::pt
