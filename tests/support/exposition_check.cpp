// The exposition checker: one pass over the lines, a family open until another one starts.
#include "exposition_check.hpp"

#include <cmath>
#include <cstdlib>
#include <set>
#include <string_view>

#include "http_exchange.hpp"

namespace daqx::test {

namespace {

bool metric_name_char(char c, bool first) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':' || (!first && c >= '0' && c <= '9');
}

bool label_name_char(char c, bool first) { return c != ':' && metric_name_char(c, first); }

std::size_t read_name(std::string_view line, std::size_t at, bool (*valid)(char, bool)) {
  std::size_t end = at;
  while (end < line.size() && valid(line[end], end == at)) ++end;
  return end;
}

bool valid_value(const std::string& text) {
  if (text == "+Inf" || text == "-Inf" || text == "NaN") return true;
  if (text.empty()) return false;
  char* end = nullptr;
  std::strtod(text.c_str(), &end);
  return end == text.c_str() + text.size();
}

}  // namespace

ExpositionCheck check_exposition(const std::string& text) {
  ExpositionCheck check;
  std::set<std::string> closed;  // families whose samples ended: they may not come back
  std::set<std::string> series;
  std::string current;
  auto problem = [&](std::size_t number, const std::string& what) {
    check.problems.push_back("line " + std::to_string(number) + ": " + what);
  };
  auto enter_family = [&](const std::string& family, std::size_t number) {
    if (family == current) return;
    if (closed.count(family)) problem(number, "family " + family + " is interleaved with another");
    if (!current.empty()) closed.insert(current);
    current = family;
  };
  if (!text.empty() && text.back() != '\n') check.problems.push_back("the text does not end with a newline");
  std::size_t number = 0;
  std::size_t start = 0;
  std::set<std::string> with_samples;
  while (start < text.size()) {
    const std::size_t end = std::min(text.find('\n', start), text.size());
    const std::string line = text.substr(start, end - start);
    start = end + 1;
    ++number;
    if (line.empty()) continue;
    if (line.starts_with("# HELP ") || line.starts_with("# TYPE ")) {
      const bool help = line[2] == 'H';
      const std::size_t name_end = read_name(line, 7, metric_name_char);
      const std::string family = line.substr(7, name_end - 7);
      if (family.empty() || name_end >= line.size() || line[name_end] != ' ') {
        problem(number, "bad " + std::string(help ? "HELP" : "TYPE") + " line: " + line);
        continue;
      }
      enter_family(family, number);
      if (with_samples.count(family)) problem(number, "HELP or TYPE after samples of " + family);
      auto& seen = help ? check.helps : check.types;
      if (seen.count(family)) problem(number, "second " + std::string(help ? "HELP" : "TYPE") + " of " + family);
      const std::string rest = line.substr(name_end + 1);
      if (!help) {
        static const std::set<std::string> types = {"counter", "gauge", "histogram", "summary", "untyped"};
        if (!types.count(rest)) problem(number, "unknown type '" + rest + "'");
      } else {
        for (std::size_t i = 0; i < rest.size(); ++i) {
          if (rest[i] == '\\' && (i + 1 >= rest.size() || (rest[i + 1] != '\\' && rest[i + 1] != 'n'))) {
            problem(number, "bad escape in HELP");
          }
          if (rest[i] == '\\') ++i;
        }
      }
      seen[family] = rest;
      continue;
    }
    if (line.starts_with("#")) continue;  // a comment

    Sample sample;
    std::size_t at = read_name(line, 0, metric_name_char);
    sample.name = line.substr(0, at);
    if (sample.name.empty()) {
      problem(number, "no metric name: " + line);
      continue;
    }
    std::string label_key;
    if (at < line.size() && line[at] == '{') {
      ++at;
      while (at < line.size() && line[at] != '}') {
        const std::size_t label_end = read_name(line, at, label_name_char);
        const std::string label = line.substr(at, label_end - at);
        if (label.empty() || label_end + 1 >= line.size() || line[label_end] != '=' || line[label_end + 1] != '"') {
          problem(number, "bad label in: " + line);
          break;
        }
        at = label_end + 2;
        std::string value;
        bool closed_quote = false;
        while (at < line.size()) {
          const char c = line[at++];
          if (c == '"') {
            closed_quote = true;
            break;
          }
          if (c == '\\') {
            const char escaped = at < line.size() ? line[at++] : '\0';
            if (escaped == '\\') value += '\\';
            else if (escaped == '"') value += '"';
            else if (escaped == 'n') value += '\n';
            else problem(number, "bad escape in a label value: " + line);
            continue;
          }
          value += c;
        }
        if (!closed_quote) problem(number, "unterminated label value: " + line);
        if (!sample.labels.emplace(label, value).second) problem(number, "label " + label + " twice: " + line);
        if (at < line.size() && line[at] == ',') ++at;
      }
      if (at >= line.size() || line[at] != '}') {
        problem(number, "labels not closed: " + line);
        continue;
      }
      label_key = line.substr(sample.name.size(), at + 1 - sample.name.size());
      ++at;
    }
    if (at >= line.size() || line[at] != ' ') {
      problem(number, "no space before the value: " + line);
      continue;
    }
    std::string value = line.substr(at + 1);
    if (const std::size_t space = value.find(' '); space != std::string::npos) {
      const std::string timestamp = value.substr(space + 1);
      value = value.substr(0, space);
      if (timestamp.empty() || timestamp.find_first_not_of("-0123456789") != std::string::npos) {
        problem(number, "bad timestamp: " + line);
      }
    }
    if (!valid_value(value)) problem(number, "bad value '" + value + "': " + line);
    sample.value = value == "NaN" ? std::nan("") : std::strtod(value.c_str(), nullptr);

    std::string family = sample.name;
    if (!check.types.count(family)) {
      for (const char* suffix : {"_bucket", "_sum", "_count"}) {
        if (family.ends_with(suffix)) family.resize(family.size() - std::string_view(suffix).size());
      }
    }
    enter_family(family, number);
    if (!check.types.count(family)) problem(number, "sample before the TYPE of its family: " + line);
    if (!check.helps.count(family)) problem(number, "sample before the HELP of its family: " + line);
    with_samples.insert(family);
    if (!series.insert(sample.name + label_key).second) problem(number, "series twice: " + line);
    check.samples.push_back(std::move(sample));
  }
  return check;
}

double exposed_value(std::uint16_t port, const std::string& name, const std::map<std::string, std::string>& labels) {
  const HttpAnswer answer = get(port, "/metrics");
  if (answer.status != 200) return std::nan("");
  const ExpositionCheck check = check_exposition(answer.body);
  const Sample* sample = check.find(name, labels);
  return sample == nullptr ? std::nan("") : sample->value;
}

}  // namespace daqx::test
