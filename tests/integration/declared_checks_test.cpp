// The checks daqx's own classes declare on their parameters (ParamSpec::check) refuse a partition at load, at the
// application's line, for values their configure would refuse: the executive started for real and --check alike.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "../support/executive_process.hpp"
#include "../support/process.hpp"

using namespace daqx::test;
using Catch::Contains;

namespace {

// One context with one application of `class_name` (its module loaded) at line 5, its properties at line 6.
std::string partition(const std::string& url, const std::string& module, const std::string& class_name,
                      const std::string& properties) {
  return "<Partition name=\"declared-checks\">\n  <Context url=\"" + url + "\">\n    <Module path=\"" + module +
         "\"/>\n    <Endpoint protocol=\"tcp\" hostname=\"127.0.0.1\" port=\"" + std::to_string(free_port()) +
         "\" network=\"d\"/>\n    <Application class=\"" + class_name + "\" id=\"1\" network=\"d\">\n" +
         "      <Properties>" + properties + "</Properties>\n    </Application>\n  </Context>\n</Partition>\n";
}

// Refused with exit 2 and "PATH:LINE: <message>", by --check and by the executive as it starts.
void require_refused_at_load(const std::string& name, const std::string& module, const std::string& class_name,
                             const std::string& properties, int line, const std::string& message) {
  const std::string url = "http://127.0.0.1:" + std::to_string(free_port());
  const std::string path = write_file(name + ".xml", partition(url, module, class_name, properties));
  const std::vector<std::string> env = {"DAQX_MODULE_PATH=" + module_directory()};
  for (const std::vector<std::string>& argv :
       {std::vector<std::string>{executive_program(), "--check", "--config", path},
        std::vector<std::string>{executive_program(), "--config", path, "--context", url}}) {
    const ProcessResult result = run_process(argv, std::chrono::seconds(60), env);
    INFO(argv[1] << ": " << outcome(result) << "\n" << result.output);
    CHECK(result.exit_code == 2);
    CHECK_THAT(result.output, Contains(path + ":" + std::to_string(line) + ": " + message));
  }
}

}  // namespace

TEST_CASE("values an application's configure would refuse are refused at load by the check its class declares, "
          "whatever the order of its properties",
          "[executive][process][parameters]") {
  const std::string evb = "libdaqx_evb.so", nton = "libdaqx_nton.so";
  SECTION("the EvM's batch bounds crossed") {
    require_refused_at_load("evm-batch", evb, "evb::EvM",
                            "<maxEventsPerRequest>100</maxEventsPerRequest><minEventsPerRequest>200</minEventsPerRequest>",
                            5,
                            "application 1 (application class evb::EvM): minEventsPerRequest (200) is above "
                            "maxEventsPerRequest (100)");
  }
  SECTION("the BU blocking below throttling") {
    require_refused_at_load("bu-levels", evb, "evb::BU", "<blockLevel>0.2</blockLevel>", 5,
                            "application 1 (application class evb::BU): blockLevel (0.2) is below throttleLevel (0.5)");
  }
  SECTION("the RU's super-fragments near 2 GiB") {
    require_refused_at_load("ru-shape", evb, "evb::RU", "<sources>200</sources><fragmentSize>16777216</fragmentSize>", 5,
                            "application 1 (application class evb::RU): sources x fragmentSize (200 x 16777216) makes "
                            "super-fragments near the protocol's 2 GiB limit");
  }
  SECTION("a Monitor's policy that does not parse") {
    require_refused_at_load("monitor-policy", evb, "evb::Monitor", "<policy>sample:0</policy>", 5,
                            "application 1 (application class evb::Monitor): policy 'sample:0': sample: '0' is out of range");
  }
  SECTION("a Monitor's stream that is no stream name") {
    require_refused_at_load("monitor-stream", evb, "evb::Monitor", "<stream>built events</stream>", 5,
                            "application 1 (application class evb::Monitor): stream: ");
  }
  SECTION("a Sender's frameSizes item that is no frame size") {
    require_refused_at_load("sender-sizes", nton, "nton::Sender", "<frameSizes>64, 0x100</frameSizes>", 5,
                            "application 1 (application class nton::Sender): frameSizes: '0x100' is not an unsigned "
                            "integer: only decimal digits are accepted (no 0x)");
  }
  SECTION("a PingPong role that is neither ping nor pong") {
    require_refused_at_load("pingpong-role", nton, "nton::PingPong", "<role>200</role>", 6,
                            "property 'role' of application class nton::PingPong: '200' is not ping or pong");
  }
}
