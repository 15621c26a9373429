// daqx-executive --list-params, as text for people and as JSON for tools, from the real binary.
#include <catch2/catch.hpp>

#include <Poco/JSON/Array.h>
#include <Poco/JSON/Object.h>
#include <Poco/JSON/Parser.h>

#include <filesystem>
#include <regex>
#include <set>

#include "../support/executive_process.hpp"
#include "../support/process.hpp"

using namespace daqx::test;
using Catch::Contains;

namespace {

ProcessResult list_params(std::vector<std::string> arguments) {
  arguments.insert(arguments.begin(), executive_program());
  return run_process(arguments, std::chrono::seconds(30), {"DAQX_MODULE_PATH=" + module_directory()});
}

Poco::JSON::Object::Ptr parameter(const Poco::JSON::Array::Ptr& parameters, const std::string& name) {
  for (std::size_t i = 0; i < parameters->size(); ++i)
    if (parameters->getObject(static_cast<unsigned>(i))->getValue<std::string>("name") == name)
      return parameters->getObject(static_cast<unsigned>(i));
  return nullptr;
}

// A JSON text in which every "min" and "max" of an int or unsigned parameter is written as an integer literal.
bool integer_bounds_written_as_integers(const std::string& json) {
  const std::regex bound(R"re("type": "(int|unsigned)",[^{}]*"(min|max)": (-?[0-9.eE+]+))re");
  bool any = false;
  for (std::sregex_iterator it(json.begin(), json.end(), bound), end; it != end; ++it) {
    any = true;
    if ((*it)[3].str().find_first_of(".eE+") != std::string::npos) return false;
  }
  return any;
}

}  // namespace

TEST_CASE("daqx-executive --list-params prints the bounds of integer parameters as integers", "[executive][process]") {
  const ProcessResult result = list_params({"--list-params", "libdaqx_pttcp.so"});
  INFO(result.output);
  REQUIRE(result.exit_code == 0);
  // packSize is unsigned from 4096 to 64 MiB; no bound of any parameter is printed with a fraction.
  CHECK_THAT(result.output, Contains("packSize (unsigned, default '262144', bytes, min 4096, max 67108864)"));
  CHECK_FALSE(std::regex_search(result.output, std::regex(R"((min|max) -?[0-9]+\.[0-9]+)")));
  // Words a string parameter may hold are listed with it.
  CHECK_THAT(result.output, Contains("waitMode (string, default 'epoll', one of epoll or busy)"));
  CHECK_THAT(result.output, Contains("transportMode (string, default 'endpoint', one of endpoint, latency or throughput)"));
}

TEST_CASE("daqx-executive --list-params keeps the fraction of a double parameter's bounds", "[executive][process]") {
  const ProcessResult result = list_params({"--list-params", "libdaqx_evb.so"});
  INFO(result.output);
  REQUIRE(result.exit_code == 0);
  // evb::EvM's ruTimeout is a double from 0.05 s.
  CHECK_THAT(result.output, Contains("min 0.05"));
}

TEST_CASE("daqx-executive --list-params --json describes every class and transport of several modules for tools",
          "[executive][process]") {
  const ProcessResult result = list_params({"--list-params", "libdaqx_nton.so", "libdaqx_pttcp.so", "--json"});
  INFO(result.output);
  REQUIRE(result.exit_code == 0);
  Poco::JSON::Object::Ptr document;
  REQUIRE_NOTHROW(document = Poco::JSON::Parser().parse(result.output).extract<Poco::JSON::Object::Ptr>());
  const Poco::JSON::Array::Ptr modules = document->getArray("modules");
  REQUIRE(modules->size() == 2);

  const Poco::JSON::Object::Ptr nton = modules->getObject(0);
  CHECK(nton->getValue<std::string>("name") == "nton");
  CHECK_THAT(nton->getValue<std::string>("path"), Contains("libdaqx_nton.so"));
  std::set<std::string> classes;
  const Poco::JSON::Array::Ptr applications = nton->getArray("applications");
  for (std::size_t i = 0; i < applications->size(); ++i) {
    const Poco::JSON::Object::Ptr application = applications->getObject(static_cast<unsigned>(i));
    classes.insert(application->getValue<std::string>("class"));
    CHECK_FALSE(application->getValue<std::string>("help").empty());
    // Every parameter has every field, so a tool needs no special cases.
    const Poco::JSON::Array::Ptr parameters = application->getArray("parameters");
    for (std::size_t j = 0; j < parameters->size(); ++j) {
      const Poco::JSON::Object::Ptr p = parameters->getObject(static_cast<unsigned>(j));
      for (const char* field : {"name", "type", "default", "unit", "min", "max", "allowed", "help"}) {
        INFO(application->getValue<std::string>("class") << " parameter " << j << " field " << field);
        CHECK(p->has(field));
      }
    }
  }
  CHECK(classes == std::set<std::string>{"nton::Sender", "nton::Receiver", "nton::PingPong"});

  const Poco::JSON::Object::Ptr tcp_module = modules->getObject(1);
  const Poco::JSON::Array::Ptr transports = tcp_module->getArray("transports");
  REQUIRE(transports->size() == 1);
  const Poco::JSON::Object::Ptr tcp = transports->getObject(0);
  CHECK(tcp->getValue<std::string>("protocol") == "tcp");
  CHECK(tcp->getObject("capabilities") != nullptr);
  const Poco::JSON::Object::Ptr pack_size = parameter(tcp->getArray("parameters"), "packSize");
  REQUIRE(pack_size != nullptr);
  CHECK(pack_size->getValue<std::string>("type") == "unsigned");
  CHECK(pack_size->getValue<std::string>("default") == "262144");
  CHECK(pack_size->getValue<std::uint64_t>("min") == 4096);
  CHECK(pack_size->getValue<std::uint64_t>("max") == 64u * 1024 * 1024);
  const Poco::JSON::Object::Ptr wait_mode = parameter(tcp->getArray("parameters"), "waitMode");
  REQUIRE(wait_mode != nullptr);
  CHECK(wait_mode->isNull("min"));
  REQUIRE(wait_mode->getArray("allowed")->size() == 2);
  CHECK(wait_mode->getArray("allowed")->getElement<std::string>(1) == "busy");

  // The parameters the executive adds to every application come once, beside the modules.
  const Poco::JSON::Array::Ptr added = document->getArray("applicationParameters");
  CHECK(parameter(added, "transportMode") != nullptr);
  CHECK(parameter(added, "dispatch") != nullptr);

  // Integer bounds are JSON integers, not 4096.0.
  CHECK(integer_bounds_written_as_integers(result.output));
}

TEST_CASE("daqx-executive --list-params=json is the same as --list-params --json", "[executive][process]") {
  const ProcessResult flag = list_params({"--list-params", "libdaqx_evb.so", "--json"});
  const ProcessResult joined = list_params({"--list-params=json", "libdaqx_evb.so"});
  REQUIRE(flag.exit_code == 0);
  CHECK(joined.exit_code == 0);
  CHECK(joined.output == flag.output);
}

TEST_CASE("daqx-executive --list-params with a module that does not exist exits 2 with the reason",
          "[executive][process]") {
  const ProcessResult result = list_params({"--list-params", "libdaqx_nton.so", "libdaqx_nonexistent.so", "--json"});
  CHECK(result.exit_code == 2);
  CHECK_THAT(result.output, Contains("libdaqx_nonexistent.so"));
}

TEST_CASE("daqx-executive --json without --list-params is a usage error", "[executive][process]") {
  const ProcessResult result = list_params({"--json"});
  CHECK(result.exit_code == 2);
  CHECK_THAT(result.output, Contains("--json goes with --list-params"));
}

TEST_CASE("daqx-executive --list-params --json without a module lists every module of the module path, and says "
          "which files there it skipped", "[executive][process]") {
  // A folder first in the module path holding a file that is no module: it is named on stderr, and the modules
  // of the build tree after it are all listed.
  const std::string folder = scratch_directory() + "/module-path-with-junk";
  std::filesystem::create_directories(folder);
  write_file("module-path-with-junk/libnot_a_module.so", "not an ELF file\n");
  const ProcessResult result = run_process({executive_program(), "--list-params", "--json"}, std::chrono::seconds(60),
                                           {"DAQX_MODULE_PATH=" + folder + ":" + module_directory()});
  INFO(result.output);
  REQUIRE(result.exit_code == 0);
  CHECK_THAT(result.output, Contains("skipped: cannot load module '" + folder + "/libnot_a_module.so'"));
  const std::size_t start = result.output.find("{\n");  // stderr's lines come before the document
  REQUIRE(start != std::string::npos);
  Poco::JSON::Object::Ptr document;
  REQUIRE_NOTHROW(document =
                      Poco::JSON::Parser().parse(result.output.substr(start)).extract<Poco::JSON::Object::Ptr>());
  std::set<std::string> names;
  const Poco::JSON::Array::Ptr modules = document->getArray("modules");
  for (std::size_t i = 0; i < modules->size(); ++i)
    names.insert(modules->getObject(static_cast<unsigned>(i))->getValue<std::string>("name"));
  for (const char* name : {"nton", "evb", "pttcp"}) {
    INFO("module " << name);
    CHECK(names.count(name) == 1);
  }
}
