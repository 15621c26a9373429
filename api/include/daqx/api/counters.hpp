// Counters an application or transport reports for the status page, the JSON API and /metrics.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "daqx/api/latency_histogram.hpp"

namespace daqx {

struct Metric {
  enum class Kind {
    counter,    // only goes up (until the owner restarts); /metrics adds _total
    gauge,      // a value now
    histogram,  // a distribution (value: the observation count); /metrics exports _bucket, _sum and _count
    state_set,  // one of `states` (value: its index); /metrics exports one series per state, 1 for the current
  };
  // Where it goes. Prometheus computes rates and quantiles from counters and histograms itself, and a setting
  // is not a measurement: those are for people (JSON API, pages, daqxctl, benches) and stay out of /metrics.
  enum class Audience { everyone, json_only };

  std::string name;    // snake_case in base units (seconds, bytes), e.g. "frames_received"; exported as
                       // daqx_<owner kind>_<name>
  Kind kind = Kind::counter;
  double value = 0;
  std::string help;    // one line
  std::vector<std::pair<std::string, std::string>> labels;  // extra labels, e.g. {"reason", "tls"}
  Audience audience = Audience::everyone;
  HistogramSnapshot histogram{};     // kind histogram: buckets in seconds (or the name's unit), sum and count
  std::vector<std::string> states{}; // kind state_set: every state it can be in, value indexes it
};

using MetricLabels = std::vector<std::pair<std::string, std::string>>;

// Filled by report() calls; cheap to build, read from relaxed atomics by the owner.
class MetricSink {
 public:
  void counter(std::string name, double value, std::string help = {}, MetricLabels labels = {}) {
    add({std::move(name), Metric::Kind::counter, value, std::move(help), std::move(labels)});
  }
  void gauge(std::string name, double value, std::string help = {}, MetricLabels labels = {}) {
    add({std::move(name), Metric::Kind::gauge, value, std::move(help), std::move(labels)});
  }
  // A figure derived from what is exported, for people: a rate over the last second, a median, a percentile.
  // Shown by the JSON API and the pages; /metrics leaves it out (Prometheus derives its own).
  void derived(std::string name, double value, std::string help = {}, MetricLabels labels = {}) {
    add({std::move(name), Metric::Kind::gauge, value, std::move(help), std::move(labels), Metric::Audience::json_only});
  }
  // A setting in effect (a mode, a size, a placement), for people: /metrics leaves it out.
  void setting(std::string name, double value, std::string help = {}, MetricLabels labels = {}) {
    add({std::move(name), Metric::Kind::gauge, value, std::move(help), std::move(labels), Metric::Audience::json_only});
  }
  void histogram(std::string name, HistogramSnapshot snapshot, std::string help = {}, MetricLabels labels = {}) {
    const double count = static_cast<double>(snapshot.count);
    Metric metric{std::move(name), Metric::Kind::histogram, count, std::move(help), std::move(labels)};
    metric.histogram = std::move(snapshot);
    add(std::move(metric));
  }
  // The state `current` indexes in `states` (every state it can be in, in a fixed order).
  void state(std::string name, std::size_t current, std::vector<std::string> states, std::string help = {},
             MetricLabels labels = {}) {
    Metric metric{std::move(name), Metric::Kind::state_set, static_cast<double>(current), std::move(help),
                  std::move(labels)};
    metric.states = std::move(states);
    add(std::move(metric));
  }
  const std::vector<Metric>& metrics() const noexcept { return metrics_; }

 private:
  void add(Metric metric) { metrics_.push_back(std::move(metric)); }
  std::vector<Metric> metrics_;
};

}  // namespace daqx
