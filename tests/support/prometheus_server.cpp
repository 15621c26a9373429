// Starting a real Prometheus for tests, and asking it and promtool what they make of daqx's /metrics.
#include "prometheus_server.hpp"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <Poco/JSON/Array.h>
#include <Poco/JSON/Parser.h>
#include <Poco/URI.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include "daqx/control/control_client.hpp"
#include "executive_process.hpp"
#include "process.hpp"

namespace daqx::test {

std::string require_tool(const std::string& name) {
  const std::string path = find_program(name);
  if (path.empty())
    skip_for_environment("DAQX_TOOLS_REQUIRE", 77,
                         name + " not installed (Debian package prometheus; scripts/dev.sh installs it)");
  return path;
}

std::string promtool_problems(const std::string& exposition) {
  static int counter = 0;
  const std::string path = write_file("exposition-" + std::to_string(++counter) + ".txt", exposition);
  // promtool reads the exposition from its standard input.
  ProcessResult result = run_process({"/bin/sh", "-c", "exec \"$0\" check metrics < \"$1\"", require_tool("promtool"), path},
                                     std::chrono::seconds(60));
  if (result.exited && result.exit_code == 0 && result.output.empty()) return {};
  return outcome(result) + ": " + (result.output.empty() ? std::string("(no output)") : result.output);
}

PrometheusServer::PrometheusServer(const std::vector<std::string>& targets) : port_(free_port()) {
  const std::string program = require_tool("prometheus");
  static int counter = 0;
  directory_ = scratch_directory() + "/prometheus-" + std::to_string(++counter);
  std::filesystem::create_directories(directory_ + "/data");
  std::string config =
      "global:\n"
      "  scrape_interval: 1s\n"
      "  scrape_timeout: 1s\n"
      "  evaluation_interval: 1s\n"
      "scrape_configs:\n"
      "  - job_name: daqx\n"
      "    static_configs:\n"
      "      - targets:\n";
  for (const std::string& target : targets) config += "        - '" + target + "'\n";
  std::ofstream(directory_ + "/prometheus.yml") << config;

  std::vector<std::string> args = {program,
                                   "--config.file=" + directory_ + "/prometheus.yml",
                                   "--storage.tsdb.path=" + directory_ + "/data",
                                   "--web.listen-address=127.0.0.1:" + std::to_string(port_),
                                   "--log.level=warn"};
  pid_ = start_process(std::move(args), directory_ + "/prometheus.log");
}

PrometheusServer::~PrometheusServer() {
  if (pid_ > 0) {
    ::kill(pid_, SIGTERM);
    reap_or_kill(pid_, std::chrono::seconds(10));
  }
  std::error_code ignored;
  std::filesystem::remove_all(directory_ + "/data", ignored);
}

bool PrometheusServer::wait_ready(std::chrono::milliseconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return false;
    }
    if (ControlClient(url(), std::chrono::seconds(1)).get("/-/ready").status == 200) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}

Poco::JSON::Object::Ptr PrometheusServer::query(const std::string& expr) const {
  Poco::URI uri("/api/v1/query");
  uri.addQueryParameter("query", expr);
  const HttpReply reply = ControlClient(url(), std::chrono::seconds(10)).get(uri.getPathAndQuery());
  try {
    return Poco::JSON::Parser().parse(reply.body).extract<Poco::JSON::Object::Ptr>();
  } catch (const std::exception&) {
    return nullptr;
  }
}

std::vector<double> PrometheusServer::values(const std::string& expr) const {
  std::vector<double> values;
  Poco::JSON::Object::Ptr answer = query(expr);
  if (!answer || answer->optValue<std::string>("status", "") != "success") return values;
  Poco::JSON::Object::Ptr data = answer->getObject("data");
  Poco::JSON::Array::Ptr result = data ? data->getArray("result") : nullptr;
  for (std::size_t i = 0; result && i < result->size(); ++i) {
    Poco::JSON::Array::Ptr sample = result->getObject(static_cast<unsigned>(i))->getArray("value");
    if (sample && sample->size() == 2) values.push_back(std::strtod(sample->getElement<std::string>(1).c_str(), nullptr));
  }
  return values;
}

std::string PrometheusServer::output() const { return read_text(directory_ + "/prometheus.log"); }

}  // namespace daqx::test
