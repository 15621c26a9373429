// The peer transport a process-level test runs over, chosen by DAQX_TRANSPORT: how to write its endpoints
// into a partition, which module carries it, and what a test may expect of it (its pools, its bad peers).
#pragma once

#include <cstdint>
#include <string>

namespace daqx::test {

// What an endpoint mostly carries; a transport with a choice (pttcp's mode) tunes itself by it.
enum class Traffic { latency, throughput };

// Which kinds of bad peer can reach the transport's endpoint, so a bad-peer test runs where its kind applies.
struct BadPeerKinds {
  bool raw_frames = false;     // a plain TCP socket carries daqx frames straight to the receiver (pttcp)
  bool raw_garbage = false;    // a plain TCP socket reaches the endpoint's port, which speaks a fabric's protocol
  bool fabric_client = false;  // a libfabric client connects properly and sends malformed frames (ofi_bad_peer)
  bool verbs_client = false;   // a librdmacm client breaks ptibv's connection protocol or frames (ibv_bad_peer)
};

struct TransportProfile {
  std::string name;          // as DAQX_TRANSPORT says it: tcp, ofi, ofi-verbs, ibv
  std::string protocol;      // the endpoints' protocol attribute: tcp, ofi, ibv
  std::string module;        // the module file that registers the protocol
  std::string provider;      // the libfabric provider (ofi only)
  std::string host;          // every data endpoint's address (DAQX_TEST_HOST, else 127.0.0.1)
  std::string receive_pool;  // the pool the transport receives into
  // Receive buffers posted for each open incoming connection count as blocks in use of receive_pool, so at
  // rest that pool holds recvDepth blocks per incoming connection rather than none.
  bool posts_receive_buffers = false;
  BadPeerKinds bad_peers;

  // <Properties> of an endpoint: a lost peer is retried within 300 ms, and traffic sets the mode where there is one.
  std::string endpoint_properties(Traffic traffic) const;
  // A whole <Endpoint> line on this host and port.
  std::string endpoint_xml(std::uint16_t port, Traffic traffic, const std::string& network = "data") const;
  std::string module_xml() const;  // <Module path="..."/>
  std::string module_path() const;  // where the build tree has it
};

// The profile named by DAQX_TRANSPORT (tcp when unset), read once; an unknown name throws std::runtime_error.
const TransportProfile& transport_profile();
TransportProfile transport_profile(const std::string& name);

// The exit code ctest is told (SKIP_RETURN_CODE) to report as "skipped".
inline constexpr int transport_skip_exit_code = 77;

// First line of every test of the transport suite: returns when the profile's module is built; otherwise prints
// why and ends the program with transport_skip_exit_code, so the test is reported skipped, not passed.
void skip_test_unless_transport_built();
// For a test that needs a kind of bad peer the profile does not offer: prints why and skips likewise.
[[noreturn]] void skip_test(const std::string& reason);

}  // namespace daqx::test
