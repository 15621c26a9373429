// A local client that connects to a ptshm endpoint the proper way (hello, segment, eventfds, one chunk) and then
// breaks the ring protocol or sends a malformed frame, as --case says: the transport suite's bad peer for shm.
//   shm_bad_peer --host H --port P --case KIND --target TID
// Cases as the fabric bad peers: bad-magic, oversized, unknown-target, truncated; and the ring's own:
// offset, length, chunk, flags, tail. Exits 0 once the receiver has closed the connection (or, truncated, once
// it has gone away in the middle of a frame), 1 otherwise.
#include <poll.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <thread>

#include "daqx/api/frame.hpp"
#include "hostile_peer.hpp"

namespace {

using daqx::ptshm::FrameEntry;
using daqx::ptshm::HostilePeer;
using daqx::ptshm::kLastBlock;

void put_header(HostilePeer& peer, std::uint32_t total, daqx::Tid target) {
  daqx::FrameHeader header;
  header.total_length = total;
  header.target = target;
  header.initiator = 999;
  daqx::encode_header(header, peer.chunk());
}

// Whether the receiver closed our socket within a few seconds.
bool closed_by_receiver(int socket) {
  pollfd one{socket, POLLIN | POLLRDHUP, 0};
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (std::chrono::steady_clock::now() < end) {
    if (poll(&one, 1, 100) > 0 && (one.revents & (POLLHUP | POLLRDHUP | POLLIN)) != 0) return true;
  }
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  std::string host = "127.0.0.1", kind;
  int port = 0;
  daqx::Tid target = 1;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string option = argv[i];
    if (option == "--host") host = argv[i + 1];
    if (option == "--port") port = std::atoi(argv[i + 1]);
    if (option == "--case") kind = argv[i + 1];
    if (option == "--target") target = static_cast<daqx::Tid>(std::atoi(argv[i + 1]));
  }
  try {
    HostilePeer peer(host, static_cast<std::uint16_t>(port));
    if (kind == "bad-magic") {
      std::memset(peer.chunk(), 0xab, 64);
      peer.write({0, kLastBlock, 0, 64, 0});
    } else if (kind == "oversized") {
      put_header(peer, 0xfffffff0u, target);
      peer.write({0, kLastBlock, 0, 64, 0});
    } else if (kind == "unknown-target") {
      put_header(peer, 64, 4242);
      peer.write({0, kLastBlock, 0, 64, 0});
    } else if (kind == "truncated") {
      put_header(peer, 128, target);
      peer.write({0, 0, 0, 64, 0});  // the first block of two, then gone
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      peer.vanish();
      std::cout << "went away in the middle of a frame\n";
      return 0;
    } else if (kind == "offset") {
      peer.write({0, kLastBlock, HostilePeer::kChunkBytes - 16, 64, 0});
    } else if (kind == "length") {
      peer.write({0, kLastBlock, 64, 0xffffffffu, 0});
    } else if (kind == "chunk") {
      peer.write({77, kLastBlock, 0, 64, 0});
    } else if (kind == "flags") {
      peer.write({0, 0x40, 0, 64, 0});
    } else if (kind == "tail") {
      peer.set_tail(std::uint64_t{1} << 40);
    } else {
      std::cerr << "shm_bad_peer: unknown case '" << kind << "'\n";
      return 2;
    }
    if (!closed_by_receiver(peer.socket())) {
      std::cerr << "shm_bad_peer: the receiver did not close the connection (case " << kind << ")\n";
      return 1;
    }
    std::cout << "closed by the receiver (case " << kind << ")\n";
    return 0;
  } catch (const std::exception& error) {
    std::cerr << "shm_bad_peer: " << error.what() << "\n";
    return 1;
  }
}
