// The peer transport a process-level test runs over, chosen by DAQX_TRANSPORT: how to write its endpoints
// into a partition, which module carries it, and what it offers, as its module declares it (tests choose
// their cases by these capabilities, never by the transport's name).
#pragma once

#include <cstdint>
#include <string>

#include "daqx/api/transport.hpp"
#include "partition_builder.hpp"

namespace daqx::test {

// What an endpoint mostly carries; a transport with a choice (pttcp's mode) tunes itself by it.
enum class Traffic { latency, throughput };

struct TransportProfile {
  std::string name;          // as DAQX_TRANSPORT says it: tcp, ofi, ofi-verbs, ibv
  std::string protocol;      // the endpoints' protocol attribute: tcp, ofi, ibv
  std::string module;        // the module file that registers the protocol
  std::string provider;      // the libfabric provider (ofi only)
  std::string host;          // every data endpoint's address (DAQX_TEST_HOST, else 127.0.0.1)
  std::string receive_pool;  // the pool the transport receives into
  // Endpoint properties that make the receive side small, so that frames a receiver holds drain it quickly
  // (empty: the message transports' recvBufferSize, recvDepth and recvPoolSize, where they keep buffers posted).
  PartitionProperties small_receive_properties;
  // What the module says a transport with this profile's parameters offers (daqx-executive --capabilities),
  // read when the module is there (suite_transport()). E.g. with posted_receive_buffers, the receive pool holds
  // recvDepth blocks per open incoming connection at rest rather than none.
  TransportCapabilities capabilities;

  // <Properties> of an endpoint: a lost peer is retried within 300 ms, and traffic sets the mode where there is one.
  PartitionProperties endpoint_properties(Traffic traffic) const;
  // An <Endpoint> of this transport on this host and port, in the context, with those properties; the caller
  // may add more.
  PropertiesBuilder add_endpoint(ContextBuilder& context, std::uint16_t port, Traffic traffic,
                                 const std::string& network = "data") const;
  std::string module_path() const;  // where the build tree has it
  // A count of work (events, frames) for a case whose point is integrity rather than volume: a quarter of it in
  // the soft-RoCE guest (DAQX_IN_RDMA_VM=1), an emulated machine many times slower than the host, where the
  // full count made each of a few cases take minutes of CI.
  std::uint64_t work(std::uint64_t count) const;
};

// The profile named by DAQX_TRANSPORT (tcp when unset), read once; an unknown name throws std::runtime_error.
const TransportProfile& transport_profile();
TransportProfile transport_profile(const std::string& name);

// The exit code ctest is told (SKIP_RETURN_CODE) to report as "skipped".
inline constexpr int transport_skip_exit_code = 77;

// First line of every test of the transport suite: returns the profile, its capabilities read, when its module is
// built; otherwise prints why and ends the program with transport_skip_exit_code, so the test is reported
// skipped, not passed.
const TransportProfile& transport_profile_if_built();
// For a test whose case the transport does not offer (by its capabilities): prints why and skips likewise.
[[noreturn]] void skip_test(const std::string& reason);

}  // namespace daqx::test
