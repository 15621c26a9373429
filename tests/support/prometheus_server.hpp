// A real Prometheus (Debian's /usr/bin/prometheus) for tests: on loopback, its storage in a scratch directory,
// scraping the targets it is given every second; queried through its HTTP API.
#pragma once

#include <sys/types.h>

#include <Poco/JSON/Object.h>

#include <chrono>
#include <string>
#include <vector>

namespace daqx::test {

// The path of a monitoring tool (prometheus, promtool); when it is missing the test ends as skipped, or failed
// where DAQX_TOOLS_REQUIRE=1 (CI, which installs it through scripts/dev.sh).
std::string require_tool(const std::string& name);

// `promtool check metrics` on an exposition: empty when it passes, else what promtool said.
std::string promtool_problems(const std::string& exposition);

class PrometheusServer {
 public:
  // Starts Prometheus scraping `targets` ("127.0.0.1:port" each, path /metrics) every second.
  explicit PrometheusServer(const std::vector<std::string>& targets);
  ~PrometheusServer();  // SIGTERM, SIGKILL after a grace period; removes its storage
  PrometheusServer(const PrometheusServer&) = delete;
  PrometheusServer& operator=(const PrometheusServer&) = delete;

  // Polls /-/ready until it answers 200; false if the process died or the time ran out.
  bool wait_ready(std::chrono::milliseconds limit = std::chrono::seconds(60));
  // GET /api/v1/query?query=expr: the whole answer ({"status": ..., "data": {"result": [...]}}), null when
  // Prometheus did not answer with JSON.
  Poco::JSON::Object::Ptr query(const std::string& expr) const;
  // The values of an instant vector query, one per series (empty on an error or no series).
  std::vector<double> values(const std::string& expr) const;
  std::string output() const;  // Prometheus's log
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

 private:
  std::uint16_t port_ = 0;
  std::string directory_;
  pid_t pid_ = -1;
};

}  // namespace daqx::test
