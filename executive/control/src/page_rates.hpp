// Rates for the executive's own pages: counters per second between two samples taken at least a second apart by
// the page requests themselves, so that the page needs no thread of its own and costs nothing while nobody looks.
#pragma once

#include <chrono>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "daqx/executive/control.hpp"

namespace daqx::http {

class PageRates {
 public:
  using Rates = std::map<std::string, double>;  // by key(), per second; absent: not known yet

  // Takes the counters of `applications` and `transports` as a sample when the last one is a second old or more,
  // and returns the rates between the two latest samples (none when they are more than 10 s apart: a page looked
  // at again after a while shows no stale average). Thread-safe.
  Rates update(const std::vector<ApplicationStatus>& applications, const std::vector<TransportStatus>& transports);

  static std::string application_key(Tid tid, const std::string& counter);
  static std::string transport_key(const std::string& protocol, const std::string& counter);
  static std::string connection_key(const std::string& protocol, const std::string& remote, const std::string& counter);

 private:
  using Clock = std::chrono::steady_clock;
  struct Sample {
    Clock::time_point when{};
    std::map<std::string, double> counters;
  };
  std::mutex mutex_;
  Sample older_, newer_;
  bool have_newer_ = false, have_older_ = false;
};

}  // namespace daqx::http
