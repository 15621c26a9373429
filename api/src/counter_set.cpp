// Reset, snapshot and report of a set of counters, from the members' own declarations.
#include "daqx/api/counter_set.hpp"

#include <stdexcept>
#include <string>

namespace daqx {

Counter::Counter(CounterSet& set, std::string_view name, std::string_view help, Metric::Kind kind)
    : name_(name), help_(help), kind_(kind) {
  // A counter is a number that goes up or a value now; histograms and state sets have their own report calls.
  if (kind != Metric::Kind::counter && kind != Metric::Kind::gauge)
    throw std::invalid_argument("counter " + std::string(name) + ": a counter set holds counters and gauges only");
  set.counters_.push_back(this);
}

void Counter::raise_to(std::uint64_t value) noexcept {
  std::uint64_t seen = value_.load(std::memory_order_relaxed);
  while (seen < value && !value_.compare_exchange_weak(seen, value, std::memory_order_relaxed)) {
  }
}

CounterValues& CounterValues::operator+=(const CounterValues& other) {
  if (values.size() < other.values.size()) values.resize(other.values.size(), 0);
  for (std::size_t i = 0; i < other.values.size(); ++i) values[i] += other.values[i];
  return *this;
}

void CounterSet::reset() noexcept {
  for (Counter* counter : counters_) counter->set(0);
}

std::size_t CounterSet::index(const Counter& member) const noexcept {
  std::size_t at = 0;
  while (at < counters_.size() && counters_[at] != &member) ++at;
  return at;
}

CounterValues CounterSet::snapshot() const {
  CounterValues taken;
  taken.values.reserve(counters_.size());
  for (const Counter* counter : counters_) taken.values.push_back(counter->load());
  return taken;
}

void CounterSet::report(MetricSink& sink, const MetricLabels& labels) const {
  report_values(sink, snapshot(), labels);
}

void CounterSet::report_values(MetricSink& sink, const CounterValues& values, const MetricLabels& labels) const {
  for (std::size_t i = 0; i < counters_.size(); ++i) {
    const Counter& counter = *counters_[i];
    // An empty sum (nothing closed yet) reports zeros.
    const auto value = static_cast<double>(i < values.values.size() ? values.values[i] : 0);
    if (counter.kind() == Metric::Kind::gauge)
      sink.gauge(std::string(counter.name()), value, std::string(counter.help()), labels);
    else
      sink.counter(std::string(counter.name()), value, std::string(counter.help()), labels);
  }
}

}  // namespace daqx
