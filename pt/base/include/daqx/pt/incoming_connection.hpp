// One incoming connection as the shared layer keeps it: whether it is up, the frame the executive could
// not take yet (delivery paused), and its counters. A transport derives from it to add its wire.
#pragma once

#include <atomic>
#include <string>

#include "daqx/api/frame.hpp"
#include "daqx/api/transport.hpp"
#include "daqx/pt/transport_counters.hpp"

namespace daqx::pt {

// How an incoming connection ended, for the counters.
enum class Ending {
  normal,     // between frames: the peer closed it, or it failed to open
  truncated,  // in the middle of a frame
  bad         // we closed it: a malformed or misaddressed frame, or a broken protocol
};

struct IncomingConnection {
  IncomingConnection() = default;
  virtual ~IncomingConnection() = default;
  IncomingConnection(const IncomingConnection&) = delete;
  IncomingConnection& operator=(const IncomingConnection&) = delete;

  PeerId id = 0;
  std::string remote;            // host:port of the peer
  std::atomic<bool> up{false};   // atomics: the control server reads them for its pages
  std::atomic<bool> closed{false};

  Frame pending;                 // complete, but its target's queue was full
  bool has_pending = false;
  bool paused = false;           // delivery paused until the executive has room (receive thread)
  IncomingTraffic traffic;
  IncomingBuffers buffers;
};

}  // namespace daqx::pt
