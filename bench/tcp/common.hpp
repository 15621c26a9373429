// Shared by the TCP and shared-memory comparison programs: option parsing, the ZeroMQ endpoint, a deadline, and round-trip statistics computed
// exactly as nton::PingPong publishes them, so the three RTT columns of bench/tcp_comparison.py compare alike.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "daqx/services/number_text.hpp"

namespace daqx::bench {

using Clock = std::chrono::steady_clock;

// `program ROLE --name value ...`; every option takes a value, an unknown one is the caller's to refuse.
class Options {
 public:
  Options(int argc, char** argv, const char* usage) : usage_(usage) {
    if (argc < 2) fail("missing role");
    role_ = argv[1];
    for (int i = 2; i < argc; i += 2) {
      std::string name = argv[i];
      if (name.rfind("--", 0) != 0 || i + 1 >= argc) fail("bad option '" + name + "'");
      values_[name.substr(2)] = argv[i + 1];
    }
  }

  const std::string& role() const { return role_; }

  std::string text(const std::string& name, const std::string& fallback) const {
    auto it = values_.find(name);
    return it == values_.end() ? fallback : it->second;
  }

  // Numbers by daqx's strict syntax (daqx/services/number_text.hpp), as every daqx program reads them.
  std::uint64_t number(const std::string& name, std::uint64_t fallback) const {
    auto it = values_.find(name);
    if (it == values_.end()) return fallback;
    const numbers::Parsed<std::uint64_t> value = numbers::parse_unsigned(it->second);
    if (!value) fail("--" + name + ": " + value.error);
    return *value;
  }

  double real(const std::string& name, double fallback) const {
    auto it = values_.find(name);
    if (it == values_.end()) return fallback;
    const numbers::Parsed<double> value = numbers::parse_real(it->second);
    if (!value) fail("--" + name + ": " + value.error);
    return *value;
  }

  // Refuses options the program does not know, so a typo never silently runs with a default.
  void only(const std::vector<std::string>& known) const {
    for (const auto& [name, value] : values_) {
      if (std::find(known.begin(), known.end(), name) == known.end()) fail("unknown option --" + name);
    }
  }

  [[noreturn]] void fail(const std::string& why) const {
    std::fprintf(stderr, "%s\n%s", why.c_str(), usage_);
    std::exit(2);
  }

 private:
  const char* usage_;
  std::string role_;
  std::map<std::string, std::string> values_;
};

// The ZeroMQ programs' endpoint: --endpoint E as given (ipc:///path for the shared-memory comparison), else
// tcp://127.0.0.1:P from --port P. One of the two is required.
inline std::string endpoint_option(const Options& options) {
  std::string endpoint = options.text("endpoint", "");
  auto port = options.number("port", 0);
  if (!endpoint.empty() && port != 0) options.fail("--endpoint and --port exclude each other");
  if (!endpoint.empty()) return endpoint;
  if (port == 0 || port > 65535) options.fail("--port P (1..65535) or --endpoint E is required");
  return "tcp://127.0.0.1:" + std::to_string(port);
}

struct RoundTripSummary {
  double min_us = 0, median_us = 0, p99_us = 0, max_us = 0;
};

// Median: mean of the two middle samples for an even count; p99: nearest rank (the smallest sample with at
// least 99 % of samples at or below it). The same definitions as nton::PingPong.
inline RoundTripSummary summarize(std::vector<double> samples_us) {
  RoundTripSummary s;
  if (samples_us.empty()) return s;
  std::sort(samples_us.begin(), samples_us.end());
  std::size_t n = samples_us.size();
  s.min_us = samples_us.front();
  s.max_us = samples_us.back();
  s.median_us = n % 2 == 1 ? samples_us[n / 2] : (samples_us[n / 2 - 1] + samples_us[n / 2]) / 2.0;
  std::size_t rank = (99 * n + 99) / 100;  // ceil(0.99 n), at least 1
  s.p99_us = samples_us[std::max<std::size_t>(rank, 1) - 1];
  return s;
}

inline void print_round_trips(std::size_t size, const std::vector<double>& samples_us) {
  RoundTripSummary s = summarize(samples_us);
  std::printf(
      "{\"size\": %zu, \"samples\": %zu, \"rtt_min_us\": %.3f, \"rtt_median_us\": %.3f, \"rtt_p99_us\": %.3f, "
      "\"rtt_max_us\": %.3f}\n",
      size, samples_us.size(), s.min_us, s.median_us, s.p99_us, s.max_us);
  std::fflush(stdout);
}

inline double microseconds(Clock::duration d) { return std::chrono::duration<double, std::micro>(d).count(); }

inline double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

}  // namespace daqx::bench
