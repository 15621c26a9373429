// GET /metrics: valid Prometheus text exposition with daqx's names and labels, checked from outside.
#include <catch2/catch.hpp>

#include <cmath>
#include <map>
#include <string>

#include "../../../tests/support/exposition_check.hpp"
#include "../../../tests/support/fake_control_model.hpp"
#include "../../../tests/support/http_exchange.hpp"

using namespace daqx::test;

TEST_CASE("/metrics is valid Prometheus text exposition with the daqx names and labels", "[http]") {
  ServedControlModel served;
  REQUIRE(post(served.port(), "/api/applications/2/transition", command_body("configure")).status == 200);
  const HttpAnswer answer = get(served.port(), "/metrics");
  REQUIRE(answer.status == 200);
  REQUIRE(answer.header("content-type").starts_with("text/plain; version=0.0.4"));
  const ExpositionCheck check = check_exposition(answer.body);
  INFO(answer.body);
  auto value = [&](const std::string& name, const std::map<std::string, std::string>& labels) {
    const Sample* sample = check.find(name, labels);
    if (sample == nullptr) FAIL("no sample " << name);
    return sample == nullptr ? -1.0 : sample->value;
  };
  for (const std::string& problem : check.problems) FAIL_CHECK(problem);
  REQUIRE(check.problems.empty());

  // A state set: one series per state, 1 for the current one; "application_instance", as Prometheus keeps
  // "instance" for its target.
  CHECK(check.types.at("daqx_application_state") == "gauge");
  const Sample* configured = check.find("daqx_application_state", {{"tid", "2"}, {"state", "Configured"}});
  REQUIRE(configured != nullptr);
  CHECK(configured->labels == std::map<std::string, std::string>{{"tid", "2"},
                                                                 {"class", "evb::RU"},
                                                                 {"application_instance", "0"},
                                                                 {"state", "Configured"}});
  CHECK(configured->value == 1);
  for (const char* state : {"Halted", "Enabled", "Failed"}) CHECK(value("daqx_application_state", {{"tid", "2"}, {"state", state}}) == 0);
  CHECK(answer.body.find("daqx_application_state{tid=\"1\",class=\"evb::EvM\",application_instance=\"0\",state=\"Halted\"} 1\n") !=
        std::string::npos);
  CHECK(value("daqx_application_output_state", {{"tid", "2"}, {"state", "throttled"}}) == 1);
  CHECK(value("daqx_application_output_state", {{"tid", "2"}, {"state", "running"}}) == 0);
  for (const Sample& sample : check.samples) {
    INFO(sample.name);
    CHECK(sample.labels.count("instance") == 0);
  }

  // Histograms in seconds: cumulative buckets, +Inf equal to the count, the sum in seconds.
  CHECK(check.types.at("daqx_application_build_latency_seconds") == "histogram");
  CHECK(value("daqx_application_build_latency_seconds_bucket", {{"tid", "2"}, {"le", "1e-06"}}) == 0);
  CHECK(value("daqx_application_build_latency_seconds_bucket", {{"tid", "2"}, {"le", "5e-06"}}) == 1);
  CHECK(value("daqx_application_build_latency_seconds_bucket", {{"tid", "2"}, {"le", "0.025"}}) == 2);
  CHECK(value("daqx_application_build_latency_seconds_bucket", {{"tid", "2"}, {"le", "+Inf"}}) == 2);
  CHECK(value("daqx_application_build_latency_seconds_count", {{"tid", "2"}}) == 2);
  CHECK(value("daqx_application_build_latency_seconds_sum", {{"tid", "2"}}) == Approx(0.020003));
  // Rates and settings are for the JSON API: Prometheus computes rates, and settings are not measurements.
  CHECK(check.types.count("daqx_application_frame_rate") == 0);
  CHECK(check.types.count("daqx_transport_busy_poll") == 0);
  // What was built.
  const Sample* build = check.find("daqx_build_info", {});
  REQUIRE(build != nullptr);
  CHECK(build->value == 1);
  CHECK(!build->labels.at("version").empty());
  CHECK(!build->labels.at("compiler").empty());
  CHECK(build->labels.count("build_type") == 1);

  CHECK(check.types.at("daqx_application_frames_received_total") == "counter");
  CHECK(check.helps.at("daqx_application_frames_received_total") == "Frames received");
  const Sample* received = check.find("daqx_application_frames_received_total", {{"tid", "3"}});
  REQUIRE(received != nullptr);
  CHECK(received->value == 300);
  // Sanitized name, HELP with an escaped newline, label values escaped and read back intact.
  CHECK(check.types.at("daqx_application_queue_depth_now") == "gauge");
  CHECK(check.helps.at("daqx_application_queue_depth_now") == "Frames waiting\\nin the queue");
  const Sample* from_peer = check.find("daqx_application_frames_from_peer_total", {{"tid", "4"}});
  REQUIRE(from_peer != nullptr);
  CHECK(from_peer->labels.at("peer") == "host \"a\"\\b\nc");
  CHECK(from_peer->labels.at("class") == "test::Fragile<&>");
  CHECK(from_peer->labels.at("note") == "bad \xef\xbf\xbd byte");  // Prometheus wants UTF-8: U+FFFD for a stray byte

  CHECK(check.types.at("daqx_pool_blocks") == "gauge");
  for (const char* name : {"daqx_pool_blocks", "daqx_pool_blocks_used", "daqx_pool_blocks_free",
                           "daqx_pool_blocks_high_water", "daqx_pool_failed_allocations_total"}) {
    INFO(name);
    CHECK(check.find(name, {{"pool", "evb/ru/0/pool"}, {"block_size", "4096"}}) != nullptr);
  }
  CHECK(check.types.at("daqx_pool_failed_allocations_total") == "counter");
  CHECK(value("daqx_pool_failed_allocations_total", {{"block_size", "65536"}}) == 7);

  CHECK(value("daqx_transport_frames_sent_total", {{"protocol", "tcp"}}) == 42);
  CHECK(value("daqx_transport_sends_would_block_total", {{"protocol", "tcp"}}) == 3);
  // Connections by what they go to (stable across reconnects), only from the side that opened them.
  CHECK(value("daqx_transport_connection_up", {{"peer_endpoint", "tcp://10.0.0.2:40000"},
                                               {"peer_context", "http://10.0.0.2:9000"}}) == 1);
  CHECK(value("daqx_transport_connection_up", {{"peer_endpoint", "tcp://10.0.0.3:40000"}}) == 0);
  CHECK(value("daqx_transport_connection_bytes_sent_total",
              {{"protocol", "tcp"}, {"peer_endpoint", "tcp://10.0.0.2:40000"}}) == 4e9);
  CHECK(answer.body.find("10.0.0.4:51234") == std::string::npos);
  for (const Sample& sample : check.samples) CHECK(sample.labels.count("remote") == 0);

  CHECK(value("daqx_executive_frames_dispatched_total", {}) == 1e6);
  CHECK(value("daqx_executive_uptime_seconds", {}) == 12.5);
  CHECK(std::isnan(value("daqx_executive_bad_frames_total", {})));

  for (const auto& [family, type] : check.types) {
    INFO(family);
    if (type == "counter") CHECK(family.ends_with("_total"));
    if (type != "counter") CHECK_FALSE(family.ends_with("_total"));
  }
}

TEST_CASE("the exposition checker finds the mistakes it is meant to find", "[http]") {
  CHECK(check_exposition("# HELP a x\n# TYPE a gauge\na 1\n").problems.empty());
  CHECK_FALSE(check_exposition("a 1\n").problems.empty());                                    // no HELP or TYPE
  CHECK_FALSE(check_exposition("# HELP a x\n# TYPE a gauge\na{b=\"1} 1\n").problems.empty());  // unterminated
  CHECK_FALSE(check_exposition("# HELP a x\n# TYPE a gauge\na one\n").problems.empty());      // bad value
  CHECK_FALSE(check_exposition("# HELP a x\n# TYPE a gauge\na{x=\"1\",x=\"2\"} 1\n").problems.empty());
  CHECK_FALSE(check_exposition("# HELP a x\n# TYPE a gauge\na 1\n# HELP b x\n# TYPE b gauge\nb 1\na{c=\"d\"} 2\n")
                  .problems.empty());  // interleaved
  CHECK_FALSE(check_exposition("# HELP a x\n# TYPE a gauge\na 1\na 2\n").problems.empty());  // same series twice
}
