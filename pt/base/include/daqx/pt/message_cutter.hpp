// Cutting frames into messages: a frame larger than the receiver's buffers, or made of more blocks than one
// message gathers, goes as several messages straight from its blocks (never a copy). Its first message
// starts with the frame header, so the receiver knows how many bytes to chain before it delivers.
#pragma once

#include <sys/uio.h>

#include <cstddef>
#include <cstdint>

#include "daqx/mempool/ref.hpp"
#include "daqx/pt/counting_registrar.hpp"

namespace daqx::pt {

// Where the sender is in the frame at the front of a connection's queue.
struct SendCursor {
  const mem::Block* block = nullptr;  // nullptr: at the start of the next frame
  std::size_t offset = 0;             // bytes of block's window already in earlier messages
  bool at_frame_start() const noexcept { return block == nullptr; }
};

// One message's gather list, at most kMaxPieces pieces.
struct MessagePieces {
  static constexpr std::size_t kMaxPieces = 16;
  iovec iov[kMaxPieces]{};
  void* descriptors[kMaxPieces]{};        // libfabric's per-buffer descriptors (RegistrationKey::descriptor)
  std::uint32_t local_keys[kMaxPieces]{};  // verbs' lkeys (RegistrationKey::key)
  std::size_t count = 0;
  std::size_t bytes = 0;
};

// Fills pieces with the next message of frame, starting at cursor: at most max_bytes and max_pieces
// pieces, straight from the frame's blocks (their registration descriptors and keys from registrar_slot, or none
// with kNoRegistration). Moves the cursor; returns true when the message ends the frame.
bool next_message(const mem::Ref& frame, SendCursor& cursor, std::size_t max_bytes, std::size_t max_pieces,
                  std::size_t registrar_slot, MessagePieces& pieces) noexcept;

}  // namespace daqx::pt
