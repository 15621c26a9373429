#include "human_units.hpp"

#include <cmath>
#include <cstdio>

namespace daqx::console {
namespace {

// Three significant figures above 1 kB: 1.69 GB, 21.0 MB, 512 kB.
std::string scaled(double value, const char* suffix) {
  static constexpr const char* kPrefixes[] = {"", "k", "M", "G", "T", "P"};
  std::size_t prefix = 0;
  while (std::fabs(value) >= 999.5 && prefix + 1 < std::size(kPrefixes)) {
    value /= 1000;
    ++prefix;
  }
  char text[48];
  if (prefix == 0)
    std::snprintf(text, sizeof text, "%.0f %s%s", value, kPrefixes[prefix], suffix);
  else
    std::snprintf(text, sizeof text, std::fabs(value) < 9.995 ? "%.2f %s%s" : std::fabs(value) < 99.95 ? "%.1f %s%s" : "%.0f %s%s",
                  value, kPrefixes[prefix], suffix);
  return text;
}

}  // namespace

std::string format_count(double count, const std::string& word) {
  char text[48];
  std::snprintf(text, sizeof text, "%.0f", count);
  return word.empty() ? std::string(text) : std::string(text).append(" ").append(word);
}

std::string format_rate(std::optional<double> per_second, const std::string& word) {
  if (!per_second || word.empty()) return "-";
  char text[48];
  // Below 10 per second a whole number hides too much (a ping-pong, a slow sender).
  std::snprintf(text, sizeof text, *per_second < 10 ? "%.1f" : "%.0f", *per_second);
  return std::string(text).append(" ").append(word).append("/s");
}

std::string format_bytes(double bytes) { return scaled(bytes, "B"); }

std::string format_bandwidth(std::optional<double> bytes_per_second) {
  return bytes_per_second ? scaled(*bytes_per_second, "B/s") : "-";
}

std::string format_seconds(double seconds) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f s", seconds);
  return text;
}

}  // namespace daqx::console
