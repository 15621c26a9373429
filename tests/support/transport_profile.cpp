// The transport profiles of the process-level tests, one per value of DAQX_TRANSPORT.
#include "transport_profile.hpp"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>

#include "executive_process.hpp"

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
  p.posts_receive_buffers = true;
  // The tcp provider listens on the endpoint's TCP port, where a plain socket can reach it; verbs does not.
  p.bad_peers.raw_garbage = provider == "tcp";
  p.bad_peers.fabric_client = true;
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
    p.bad_peers.raw_frames = true;
  } else if (name == "ofi") {
    p = ofi_profile(name, "tcp");
  } else if (name == "ofi-verbs") {
    p = ofi_profile(name, "verbs");
  } else if (name == "ibv") {
    p.name = name;
    p.protocol = "ibv";
    p.module = "libdaqx_ptibv.so";
    p.receive_pool = "pt/ibv/recv";
    p.posts_receive_buffers = true;
    p.bad_peers.verbs_client = true;
  } else {
    throw std::runtime_error("DAQX_TRANSPORT=" + name + ": unknown transport (tcp, ofi, ofi-verbs or ibv)");
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

std::string TransportProfile::endpoint_properties(Traffic traffic) const {
  std::string xml;
  if (protocol == "tcp") xml.append(traffic == Traffic::throughput ? "<mode>throughput</mode>" : "<mode>latency</mode>");
  if (!provider.empty()) xml.append("<provider>").append(provider).append("</provider>");
  xml.append("<reconnectMax>300</reconnectMax>");
  return xml;
}

std::string TransportProfile::endpoint_xml(std::uint16_t port, Traffic traffic, const std::string& network) const {
  std::string xml("<Endpoint protocol=\"");
  xml.append(protocol).append("\" hostname=\"").append(host).append("\" port=\"").append(std::to_string(port));
  xml.append("\" network=\"").append(network).append("\"><Properties>").append(endpoint_properties(traffic));
  xml.append("</Properties></Endpoint>");
  return xml;
}

std::string TransportProfile::module_xml() const {
  std::string xml("<Module path=\"");
  return xml.append(module).append("\"/>");
}

std::string TransportProfile::module_path() const {
  std::string path = module_directory();
  return path.append("/").append(module);
}

void skip_test(const std::string& reason) {
  std::printf("SKIPPED over %s: %s\n", transport_profile().name.c_str(), reason.c_str());
  std::fflush(stdout);
  std::fflush(stderr);
  // _Exit, not exit: the test framework is mid-test, and the sanitizer build's leak checker would report
  // what it still holds and turn the skip into a failure.
  std::_Exit(transport_skip_exit_code);
}

void skip_test_unless_transport_built() {
  const TransportProfile& profile = transport_profile();
  if (std::filesystem::exists(profile.module_path())) return;
  std::string reason(profile.module);
  skip_test(reason.append(" is not built (looked in ").append(module_directory()).append(")"));
}

}  // namespace daqx::test
