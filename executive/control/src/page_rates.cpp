// PageRates: two samples of the counters, a second or more apart, and the difference between them.
#include "page_rates.hpp"

namespace daqx::http {
namespace {

void add_counters(std::map<std::string, double>& into, const std::vector<Metric>& metrics, const std::string& prefix) {
  for (const Metric& metric : metrics)
    if (metric.kind == Metric::Kind::counter && metric.labels.empty()) into[prefix + metric.name] = metric.value;
}

}  // namespace

std::string PageRates::application_key(Tid tid, const std::string& counter) {
  return "app/" + std::to_string(tid) + "/" + counter;
}
std::string PageRates::transport_key(const std::string& protocol, const std::string& counter) {
  return "transport/" + protocol + "/" + counter;
}
std::string PageRates::connection_key(const std::string& protocol, const std::string& remote, const std::string& counter) {
  return "connection/" + protocol + "/" + remote + "/" + counter;
}

PageRates::Rates PageRates::update(const std::vector<ApplicationStatus>& applications,
                                   const std::vector<TransportStatus>& transports) {
  const Clock::time_point now = Clock::now();
  std::lock_guard lock(mutex_);
  if (!have_newer_ || now - newer_.when >= std::chrono::seconds(1)) {
    Sample sample;
    sample.when = now;
    for (const ApplicationStatus& application : applications)
      add_counters(sample.counters, application.metrics, application_key(application.tid, ""));
    for (const TransportStatus& transport : transports) {
      add_counters(sample.counters, transport.metrics, transport_key(transport.protocol, ""));
      for (const ConnectionInfo& connection : transport.connections)
        add_counters(sample.counters, connection.metrics, connection_key(transport.protocol, connection.remote, ""));
    }
    if (have_newer_) {
      older_ = std::move(newer_);
      have_older_ = true;
    }
    newer_ = std::move(sample);
    have_newer_ = true;
  }
  Rates rates;
  if (!have_older_) return rates;
  const double seconds = std::chrono::duration<double>(newer_.when - older_.when).count();
  if (seconds <= 0 || seconds > 10) return rates;
  for (const auto& [key, value] : newer_.counters) {
    const auto before = older_.counters.find(key);
    if (before != older_.counters.end() && value >= before->second) rates[key] = (value - before->second) / seconds;
  }
  return rates;
}

}  // namespace daqx::http
