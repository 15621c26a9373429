// Cutting frames into messages along their blocks, and packing small ones together.
#include "daqx/pt/message_cutter.hpp"

#include <algorithm>

#include "daqx/api/frame.hpp"

namespace daqx::pt {
namespace {

// Pieces the first `bytes` bytes of a chain take.
std::size_t pieces_for(const mem::Block* block, std::size_t bytes) noexcept {
  std::size_t pieces = 0;
  for (; block != nullptr && bytes > 0; block = block->next()) {
    if (block->size() == 0) continue;
    ++pieces;
    bytes -= std::min(bytes, block->size());
  }
  return pieces;
}

void add_piece(MessagePieces& pieces, const mem::Block& block, std::size_t offset, std::size_t take,
               std::size_t registrar_slot) noexcept {
  pieces.iov[pieces.count].iov_base = block.data() + offset;
  pieces.iov[pieces.count].iov_len = take;
  if (registrar_slot == kNoRegistration) {
    pieces.descriptors[pieces.count] = nullptr;
    pieces.local_keys[pieces.count] = 0;
  } else {
    const mem::RegistrationKey& key = block.key(registrar_slot);
    pieces.descriptors[pieces.count] = key.descriptor;
    pieces.local_keys[pieces.count] = static_cast<std::uint32_t>(key.key);
  }
  ++pieces.count;
  pieces.bytes += take;
}

}  // namespace

void next_message(mem::RefRing& queue, SendCursor& cursor, std::size_t max_bytes, std::size_t max_pieces,
                  std::size_t registrar_slot, bool pack, MessagePieces& pieces) noexcept {
  pieces.count = 0;
  pieces.bytes = 0;
  pieces.frames_ended = 0;
  max_pieces = std::min(max_pieces, MessagePieces::kMaxPieces);
  while (cursor.frame < queue.size()) {
    const mem::Ref& frame = queue.at(cursor.frame);
    if (cursor.at_frame_start() && pieces.bytes > 0) {
      // Another frame joins this message when it fits whole (a frame that fits one message is never cut), or
      // when it is too large for any message and must be cut anyway: then it fills the room, as long as its
      // header fits whole (the receiver reads a header from one buffer, never from two).
      const std::size_t room = max_bytes - pieces.bytes;
      const std::size_t pieces_left = max_pieces - pieces.count;
      const std::size_t total = frame.total_size();
      const bool fits = total <= room && pieces_for(frame.head(), total) <= pieces_left;
      const bool cut_anyway = total > max_bytes && room >= kFrameHeaderSize &&
                              pieces_for(frame.head(), kFrameHeaderSize) <= pieces_left;
      if (!fits && !cut_anyway) return;
    }
    if (cursor.at_frame_start()) {
      cursor.block = frame.head();
      cursor.offset = 0;
    }
    const mem::Block* block = cursor.block;
    std::size_t offset = cursor.offset;
    while (block != nullptr && pieces.count < max_pieces && pieces.bytes < max_bytes) {
      const std::size_t left = block->size() - offset;
      if (left == 0) {  // an empty block (or one already sent whole): nothing to gather
        block = block->next();
        offset = 0;
        continue;
      }
      const std::size_t take = std::min(left, max_bytes - pieces.bytes);
      add_piece(pieces, *block, offset, take, registrar_slot);
      offset += take;
      if (offset == block->size()) {
        block = block->next();
        offset = 0;
      }
    }
    // Skip trailing empty blocks, so that "the frame is done" is known with its last message.
    while (block != nullptr && offset == block->size()) {
      block = block->next();
      offset = 0;
    }
    if (block != nullptr) {  // the message is full in the middle of this frame
      cursor.block = block;
      cursor.offset = offset;
      return;
    }
    ++pieces.frames_ended;
    ++cursor.frame;
    cursor.block = nullptr;
    cursor.offset = 0;
    if (!pack) return;
  }
}

}  // namespace daqx::pt
