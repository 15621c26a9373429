// A checker of the Prometheus text exposition format 0.0.4, independent of the server that writes it: every problem
// it finds (a line that does not parse, a sample before its family's HELP or TYPE, a family interleaved with
// another, a series twice), and the samples, types and help texts it read.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace daqx::test {

// One sample line: the metric's name, its labels (values unescaped) and its value.
struct Sample {
  std::string name;
  std::map<std::string, std::string> labels;
  double value = 0;
};

// What the checker found in an exposition: its problems ("line N: what"), and what it read.
struct ExpositionCheck {
  std::vector<std::string> problems;
  std::vector<Sample> samples;
  std::map<std::string, std::string> types;  // family -> counter, gauge, ...
  std::map<std::string, std::string> helps;

  // The first sample of `name` whose labels include `labels`; nullptr when there is none.
  const Sample* find(const std::string& name, const std::map<std::string, std::string>& labels) const {
    for (const Sample& sample : samples) {
      if (sample.name != name) continue;
      bool all = true;
      for (const auto& [label, value] : labels) {
        auto found = sample.labels.find(label);
        all = all && found != sample.labels.end() && found->second == value;
      }
      if (all) return &sample;
    }
    return nullptr;
  }
};

// Reads a whole exposition (what GET /metrics answers).
ExpositionCheck check_exposition(const std::string& text);

// The value of the first sample `name` with `labels` that GET /metrics of the server on 127.0.0.1:`port` answers;
// NaN when the answer is not 200 or has no such sample.
double exposed_value(std::uint16_t port, const std::string& name, const std::map<std::string, std::string>& labels = {});

}  // namespace daqx::test
