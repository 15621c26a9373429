// The transport profiles of the process-level tests, one per value of DAQX_TRANSPORT.
#include "transport_profile.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <stdexcept>
#include <string>

#include <unistd.h>

#include <Poco/JSON/Array.h>
#include <Poco/JSON/Object.h>
#include <Poco/JSON/Parser.h>

#include "executive_process.hpp"
#include "process.hpp"

namespace daqx::test {
namespace {

std::string data_host() {
  const char* host = std::getenv("DAQX_TEST_HOST");
  return host != nullptr && *host != '\0' ? std::string(host) : std::string("127.0.0.1");
}

TransportProfile ofi_profile(const std::string& name, const std::string& provider) {
  TransportProfile p;
  p.name = name;
  p.protocol = "ofi";
  p.module = "libdaqx_ptofi.so";
  p.provider = provider;
  p.receive_pool = "pt/ofi/recv";
  return p;
}

}  // namespace

TransportProfile transport_profile(const std::string& name) {
  TransportProfile p;
  if (name == "tcp") {
    p.name = name;
    p.protocol = "tcp";
    p.module = "libdaqx_pttcp.so";
    p.receive_pool = "pt/tcp/recv";
  } else if (name == "shm") {
    p.name = name;
    p.protocol = "shm";
    p.module = "libdaqx_ptshm.so";
    p.receive_pool = "pt/shm/recv";
    // Its receive side is the descriptors of the peers' blocks that applications may hold.
    p.small_receive_properties = {{"receiveDescriptors", "256", ""}};
  } else if (name == "ofi") {
    p = ofi_profile(name, "tcp");
  } else if (name == "ofi-verbs") {
    p = ofi_profile(name, "verbs");
  } else if (name == "ibv") {
    p.name = name;
    p.protocol = "ibv";
    p.module = "libdaqx_ptibv.so";
    p.receive_pool = "pt/ibv/recv";
  } else {
    throw std::runtime_error("DAQX_TRANSPORT=" + name + ": unknown transport (tcp, shm, ofi, ofi-verbs or ibv)");
  }
  p.host = data_host();
  return p;
}

const TransportProfile& transport_profile() {
  static const TransportProfile profile = [] {
    const char* name = std::getenv("DAQX_TRANSPORT");
    return transport_profile(name != nullptr && *name != '\0' ? std::string(name) : std::string("tcp"));
  }();
  return profile;
}

PartitionProperties TransportProfile::endpoint_properties(Traffic traffic) const {
  PartitionProperties properties{{"mode", traffic == Traffic::throughput ? "throughput" : "latency", ""}};
  if (!provider.empty()) properties.push_back({"provider", provider, ""});
  properties.push_back({"reconnectMax", "300", ""});
  return properties;
}

PropertiesBuilder TransportProfile::add_endpoint(ContextBuilder& context, std::uint16_t port, Traffic traffic,
                                                 const std::string& network) const {
  return context.endpoint(protocol, host, port, network).properties(endpoint_properties(traffic));
}

std::uint64_t TransportProfile::work(std::uint64_t count) const {
  const char* guest = std::getenv("DAQX_IN_RDMA_VM");
  const bool emulated = guest != nullptr && std::string(guest) == "1";
  return emulated ? std::max<std::uint64_t>(1, count / 4) : count;
}

std::string TransportProfile::module_path() const {
  std::string path = module_directory();
  return path.append("/").append(module);
}

void skip_test(const std::string& reason) {
  std::printf("SKIPPED over %s: %s\n", transport_profile().name.c_str(), reason.c_str());
  end_descendants(std::chrono::seconds(5));
  std::fflush(stdout);
  std::fflush(stderr);
  // _Exit, not exit: the test framework is mid-test, and the sanitizer build's leak checker would report
  // what it still holds and turn the skip into a failure.
  std::_Exit(transport_skip_exit_code);
}

namespace {

// Where a suite that runs each case in a process of its own keeps what the first case was told, named for the
// module and the executive as built (path, size, time) and the provider: DAQX_TEST_CAPABILITIES_CACHE, a
// directory, or "" for none. In the emulated guest a query costs one to three seconds (libfabric's start reads
// /proc/kallsyms twice), paid again by every one of the suite's cases.
std::string capabilities_cache_file(const TransportProfile& profile) {
  const char* directory = std::getenv("DAQX_TEST_CAPABILITIES_CACHE");
  if (directory == nullptr || *directory == '\0') return "";
  std::string key = profile.provider;
  for (const std::string& path : {profile.module_path(), executive_program()}) {
    std::error_code error;
    const auto size = std::filesystem::file_size(path, error);
    const auto written = std::filesystem::last_write_time(path, error);
    if (error) return "";
    key += "|" + path + "|" + std::to_string(size) + "|" + std::to_string(written.time_since_epoch().count());
  }
  return std::string(directory) + "/" + profile.module + "-" + std::to_string(std::hash<std::string>{}(key)) + ".json";
}

// What `daqx-executive --capabilities MODULE [provider=...]` prints, from the suite's cache when it has it.
std::string capabilities_output(const TransportProfile& profile) {
  const std::string cached = capabilities_cache_file(profile);
  if (!cached.empty()) {
    std::string text = read_text(cached);
    if (!text.empty()) return text;
  }
  std::vector<std::string> command{executive_program(), "--capabilities", profile.module_path()};
  if (!profile.provider.empty()) command.push_back("provider=" + profile.provider);
  const ProcessResult result = run_process(command, std::chrono::seconds(30));
  if (!result.exited || result.exit_code != 0)
    throw std::runtime_error("daqx-executive --capabilities " + profile.module + " failed:\n" + result.output);
  if (!cached.empty()) {
    // Written whole and then renamed: a case that starts meanwhile reads all of it or none.
    const std::string partial = cached + "." + std::to_string(getpid());
    // A cache that cannot be written costs only time: the next case asks again.
    std::error_code ignored;
    if (std::ofstream(partial) << result.output) std::filesystem::rename(partial, cached, ignored);
    std::filesystem::remove(partial, ignored);
  }
  return result.output;
}

// What the profile's transport offers, as `daqx-executive --capabilities` says.
TransportCapabilities read_capabilities(const TransportProfile& profile) {
  const std::string output = capabilities_output(profile);
  Poco::JSON::Array::Ptr transports = Poco::JSON::Parser().parse(output).extract<Poco::JSON::Array::Ptr>();
  for (std::size_t i = 0; i < transports->size(); ++i) {
    Poco::JSON::Object::Ptr transport = transports->getObject(static_cast<unsigned>(i));
    if (transport->getValue<std::string>("protocol") != profile.protocol) continue;
    Poco::JSON::Object::Ptr c = transport->getObject("capabilities");
    TransportCapabilities capabilities;
    capabilities.memory_registration = c->getValue<bool>("memory_registration");
    capabilities.rdma_device = c->getValue<bool>("rdma_device");
    capabilities.inline_bytes = c->getValue<std::size_t>("inline_bytes");
    capabilities.gather_limit = c->getValue<std::size_t>("gather_limit");
    capabilities.coalescing = c->getValue<bool>("coalescing");
    capabilities.busy_polling = c->getValue<bool>("busy_polling");
    capabilities.credit_flow = c->getValue<bool>("credit_flow");
    capabilities.posted_receive_buffers = c->getValue<bool>("posted_receive_buffers");
    capabilities.numa_placement = c->getValue<bool>("numa_placement");
    capabilities.shared_memory_pools = c->getValue<bool>("shared_memory_pools");
    capabilities.plain_tcp_port = c->getValue<bool>("plain_tcp_port");
    capabilities.frames_on_plain_tcp = c->getValue<bool>("frames_on_plain_tcp");
    capabilities.connection_manager = c->getValue<std::string>("connection_manager");
    return capabilities;
  }
  throw std::runtime_error(profile.module + " has no transport for protocol " + profile.protocol);
}

}  // namespace

const TransportProfile& transport_profile_if_built() {
  static const TransportProfile profile = [] {
    TransportProfile p = transport_profile();
    if (!std::filesystem::exists(p.module_path()))
      skip_for_environment("DAQX_TRANSPORT_REQUIRE", transport_skip_exit_code,
                           "over " + p.name + ": " + p.module + " is not built (looked in " + module_directory() + ")");
    p.capabilities = read_capabilities(p);
    return p;
  }();
  return profile;
}

}  // namespace daqx::test
