// Counters an application or transport reports for the status page, the JSON API and /metrics.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace daqx {

struct Metric {
  enum class Kind { counter, gauge };
  std::string name;    // snake_case, e.g. "frames_received"; exported as daqx_<owner kind>_<name>
  Kind kind = Kind::counter;
  double value = 0;
  std::string help;    // one line
  std::vector<std::pair<std::string, std::string>> labels;  // extra labels, e.g. {"peer", "host:port"}
};

// Filled by report() calls; cheap to build, read from relaxed atomics by the owner.
class MetricSink {
 public:
  void counter(std::string name, double value, std::string help = {},
               std::vector<std::pair<std::string, std::string>> labels = {}) {
    metrics_.push_back({std::move(name), Metric::Kind::counter, value, std::move(help), std::move(labels)});
  }
  void gauge(std::string name, double value, std::string help = {},
             std::vector<std::pair<std::string, std::string>> labels = {}) {
    metrics_.push_back({std::move(name), Metric::Kind::gauge, value, std::move(help), std::move(labels)});
  }
  const std::vector<Metric>& metrics() const noexcept { return metrics_; }

 private:
  std::vector<Metric> metrics_;
};

}  // namespace daqx
