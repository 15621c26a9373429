// Frames into messages, straight from their blocks (never a copy): a frame larger than the receiver's buffers,
// or made of more blocks than one message gathers, goes as several messages; and, when packing, one message
// carries several small frames back to back. Frames are self-delimiting (each starts with its header, which
// says its length), so the receiver splits them again; a frame starts in a message only where its whole
// header fits, so no header is ever cut in two.
#pragma once

#include <sys/uio.h>

#include <cstddef>
#include <cstdint>

#include "daqx/mempool/ref_ring.hpp"
#include "daqx/pt/counting_registrar.hpp"

namespace daqx::pt {

// Where the sender is in a connection's queue: frames before `frame` are all in messages already.
struct SendCursor {
  std::size_t frame = 0;              // index in the queue of the next frame to go
  const mem::Block* block = nullptr;  // nullptr: at that frame's start
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
  std::size_t frames_ended = 0;  // frames whose last byte is in this message
};

// Fills pieces with the next message of queue, from cursor: at most max_bytes and max_pieces pieces, straight
// from the frames' blocks (their registration descriptors and keys from registrar_slot, or none with
// kNoRegistration). With pack, a message that ends a frame goes on with the next frames of the queue while
// their header fits. Moves the cursor; frames_ended says how many frames the message completes.
void next_message(mem::RefRing& queue, SendCursor& cursor, std::size_t max_bytes, std::size_t max_pieces,
                  std::size_t registrar_slot, bool pack, MessagePieces& pieces) noexcept;

}  // namespace daqx::pt
