// ptshm's connection set-up: the Unix socket an endpoint listens on, and the messages on it, each with the
// descriptors it carries (SCM_RIGHTS): hello (the connection's segment and its two eventfds) and chunk (one
// memfd of the sender's pools, announced before the first frame that uses it). The only message the receiver
// sends back is a chunk request: the memfd of a chunk it mapped once more (answered with a chunk message), when
// it passes blocks of that chunk on to a third context.
#pragma once

#include <sys/socket.h>
#include <sys/un.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace daqx::ptshm {

inline constexpr std::uint32_t kHelloMagic = 0x4c454844;  // "DHEL"
inline constexpr std::uint32_t kChunkMagic = 0x4b4e4843;  // "CHNK"
inline constexpr std::uint32_t kChunkRequestMagic = 0x51524843;  // "CHRQ"
// Chunk ids a receiver accepts: its table of mappings is indexed by them.
inline constexpr std::uint32_t kMaxChunks = 65536;

struct HelloMessage {
  std::uint32_t magic = kHelloMagic;
  std::uint32_t version = 1;
  std::uint32_t ring_entries = 0;
  std::uint32_t pid = 0;  // of the sender, for logs
  std::uint64_t segment_bytes = 0;
  // descriptors: the segment's memfd, the frames ring's eventfd, the returns ring's eventfd
};

struct ChunkMessage {
  std::uint32_t magic = kChunkMagic;
  std::uint32_t id = 0;
  std::uint64_t bytes = 0;
  // descriptor: the chunk's memfd
};

// Receiver to sender: send chunk `id`'s memfd again (once per chunk and connection; it was announced).
struct ChunkRequest {
  std::uint32_t magic = kChunkRequestMagic;
  std::uint32_t id = 0;
};

// The socket address of an shm endpoint: "daqx-shm/<host>:<port>" in the abstract namespace, so that shm
// endpoints are named like the others of the partition and nothing is left in the file system.
sockaddr_un endpoint_socket_address(const std::string& host, std::uint16_t port, socklen_t& length);

// Sends one message with up to 3 descriptors; "" or the reason it failed.
std::string send_message(int socket, const void* message, std::size_t bytes, const int* fds, int fd_count);

// Receives one message: its byte count (0: the peer closed, -1: nothing now, -2: failed, see error) and the
// descriptors that came with it (-1 where none; extra descriptors are closed).
long receive_message(int socket, void* message, std::size_t bytes, int* fds, int max_fds, std::string& error);

// A memfd sealed against shrinking, so a peer that maps it can never be made to fault past its end.
bool sealed_against_shrinking(int fd) noexcept;
// Its size, or 0.
std::size_t descriptor_size(int fd) noexcept;

}  // namespace daqx::ptshm
