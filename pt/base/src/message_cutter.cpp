// Cutting a frame into messages along its blocks.
#include "daqx/pt/message_cutter.hpp"

#include <algorithm>

namespace daqx::pt {

bool next_message(const mem::Ref& frame, SendCursor& cursor, std::size_t max_bytes, std::size_t max_pieces,
                  std::size_t registrar_slot, MessagePieces& pieces) noexcept {
  pieces.count = 0;
  pieces.bytes = 0;
  max_pieces = std::min(max_pieces, MessagePieces::kMaxPieces);
  if (cursor.at_frame_start()) {
    cursor.block = frame.head();
    cursor.offset = 0;
  }
  const mem::Block* block = cursor.block;
  std::size_t offset = cursor.offset;
  while (block != nullptr && pieces.count < max_pieces && pieces.bytes < max_bytes) {
    std::size_t left = block->size() - offset;
    if (left == 0) {  // an empty block (or one already sent whole): nothing to gather
      block = block->next();
      offset = 0;
      continue;
    }
    std::size_t take = std::min(left, max_bytes - pieces.bytes);
    pieces.iov[pieces.count].iov_base = block->data() + offset;
    pieces.iov[pieces.count].iov_len = take;
    if (registrar_slot == kNoRegistration) {
      pieces.descriptors[pieces.count] = nullptr;
      pieces.local_keys[pieces.count] = 0;
    } else {
      const mem::RegistrationKey& key = block->key(registrar_slot);
      pieces.descriptors[pieces.count] = key.descriptor;
      pieces.local_keys[pieces.count] = static_cast<std::uint32_t>(key.key);
    }
    ++pieces.count;
    pieces.bytes += take;
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
  if (block == nullptr) {
    cursor = SendCursor{};
    return true;
  }
  cursor.block = block;
  cursor.offset = offset;
  return false;
}

}  // namespace daqx::pt
