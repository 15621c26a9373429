// Figures as an operator reads them: amounts and rates with their unit, bytes in decimal SI units (1 GB = 1e9 B,
// the same as GB/s), a missing figure as "-".
#pragma once

#include <optional>
#include <string>

namespace daqx::console {

std::string format_count(double count, const std::string& word);          // "96280 events"
std::string format_rate(std::optional<double> per_second, const std::string& word);  // "25255 events/s", "-"
std::string format_bytes(double bytes);                                   // "512 B", "21.0 MB", "6.46 GB"
std::string format_bandwidth(std::optional<double> bytes_per_second);     // "1.69 GB/s", "-"
std::string format_seconds(double seconds);                               // "12.0 s"

}  // namespace daqx::console
