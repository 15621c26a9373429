// A program that holds a TCP port on loopback and says nothing: a socket listening on 127.0.0.1 that never
// accepts (the kernel completes connections to it; nobody reads them). What a test puts where daqx expects a port
// to be free, or a peer that answers.
#pragma once

#include <cstdint>

namespace daqx::test {

class LoopbackListener {
 public:
  // Listens on 127.0.0.1:port (0: a port of the kernel's choice); throws std::runtime_error when it cannot.
  explicit LoopbackListener(std::uint16_t port = 0);
  ~LoopbackListener();
  LoopbackListener(const LoopbackListener&) = delete;
  LoopbackListener& operator=(const LoopbackListener&) = delete;

  std::uint16_t port() const noexcept { return port_; }
  // Stops listening: the port refuses connections from now on (until someone else takes it).
  void close();

 private:
  int fd_ = -1;
  std::uint16_t port_ = 0;
};

// Whether something accepts TCP connections on 127.0.0.1:port now.
bool listened_on(std::uint16_t port);

}  // namespace daqx::test
