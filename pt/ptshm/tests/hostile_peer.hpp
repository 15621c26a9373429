// A local peer that speaks ptshm's connection set-up properly and then writes into its frames ring whatever it
// is told: the bad peer of ptshm's unit test and of the transport suite (tests/programs/shm_bad_peer.cpp).
#pragma once

#include <fcntl.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <new>
#include <stdexcept>
#include <string>

#include "ring.hpp"
#include "wire.hpp"

namespace daqx::ptshm {

class HostilePeer {
 public:
  static constexpr std::uint32_t kEntries = 64;
  static constexpr std::size_t kChunkBytes = 1u << 20;  // chunk 0, announced at once

  HostilePeer(const std::string& host, std::uint16_t port) {
    socklen_t length = 0;
    sockaddr_un name = endpoint_socket_address(host, port, length);
    socket_ = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    if (::connect(socket_, reinterpret_cast<sockaddr*>(&name), length) != 0) fail("connect");
    const SegmentLayout layout = SegmentLayout::of(kEntries);
    const int segment = sealed_memfd(layout.bytes);
    memory_ = map(segment, layout.bytes);
    bytes_ = layout.bytes;
    header_ = new (memory_) SegmentHeader{};
    header_->ring_entries = kEntries;
    entries_ = reinterpret_cast<FrameEntry*>(memory_ + layout.frames_at);
    frames_wake_ = eventfd(0, EFD_CLOEXEC);
    returns_wake_ = eventfd(0, EFD_CLOEXEC);
    HelloMessage hello;
    hello.ring_entries = kEntries;
    hello.pid = static_cast<std::uint32_t>(getpid());
    hello.segment_bytes = layout.bytes;
    const int fds[3] = {segment, frames_wake_, returns_wake_};
    if (!send_message(socket_, &hello, sizeof hello, fds, 3).empty()) fail("hello");
    close(segment);
    chunk_ = sealed_memfd(kChunkBytes);
    chunk_memory_ = map(chunk_, kChunkBytes);
    ChunkMessage announce;
    announce.id = 0;
    announce.bytes = kChunkBytes;
    if (!send_message(socket_, &announce, sizeof announce, &chunk_, 1).empty()) fail("chunk");
  }
  ~HostilePeer() {
    munmap(memory_, bytes_);
    munmap(chunk_memory_, kChunkBytes);
    if (socket_ >= 0) close(socket_);
    close(frames_wake_);
    close(returns_wake_);
    close(chunk_);
  }
  HostilePeer(const HostilePeer&) = delete;
  HostilePeer& operator=(const HostilePeer&) = delete;

  int socket() const noexcept { return socket_; }
  // The bytes of chunk 0, for frames made by hand.
  std::byte* chunk() const noexcept { return chunk_memory_; }
  // Writes one entry, publishes it and wakes the receiver.
  void write(const FrameEntry& entry) {
    entries_[tail_ % kEntries] = entry;
    set_tail(++tail_);
  }
  void set_tail(std::uint64_t tail) {
    header_->frames.tail.store(tail, std::memory_order_release);
    const std::uint64_t one = 1;
    if (::write(frames_wake_, &one, sizeof one) != sizeof one) fail("eventfd");
  }
  // Goes away as a dead process would.
  void vanish() {
    close(socket_);
    socket_ = -1;
  }

 private:
  [[noreturn]] static void fail(const char* what) {
    throw std::runtime_error(std::string(what) + ": " + std::strerror(errno));
  }
  static int sealed_memfd(std::size_t bytes) {
    const int fd = memfd_create("daqx-shm-hostile", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0 || ftruncate(fd, static_cast<off_t>(bytes)) != 0 || fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK) != 0)
      fail("memfd");
    return fd;
  }
  static std::byte* map(int fd, std::size_t bytes) {
    void* memory = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (memory == MAP_FAILED) fail("mmap");
    return static_cast<std::byte*>(memory);
  }

  int socket_ = -1;
  int frames_wake_ = -1;
  int returns_wake_ = -1;
  int chunk_ = -1;
  std::byte* memory_ = nullptr;
  std::size_t bytes_ = 0;
  std::byte* chunk_memory_ = nullptr;
  SegmentHeader* header_ = nullptr;
  FrameEntry* entries_ = nullptr;
  std::uint64_t tail_ = 0;
};

}  // namespace daqx::ptshm
