// Byte ranges of a Ref chain: reading and writing a payload that may continue from block to block.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <span>

#include "daqx/mempool/block.hpp"

namespace daqx::nton {

// Offsets count through the data windows of the chain, head first, as if the windows were one buffer.
// Calls visit(std::span<std::byte> piece, std::size_t position) for each contiguous piece of the bytes
// [offset, offset + length), where position is the piece's distance from offset. Returns the bytes visited:
// fewer than length when the chain is shorter.
template <typename Visit>
std::size_t for_each_piece(const mem::Block* head, std::size_t offset, std::size_t length, Visit&& visit) {
  std::size_t position = 0;
  for (const mem::Block* block = head; block != nullptr && position < length; block = block->next()) {
    const std::size_t size = block->size();
    if (offset >= size) {
      offset -= size;
      continue;
    }
    const std::size_t take = std::min(size - offset, length - position);
    visit(std::span<std::byte>(block->data() + offset, take), position);
    position += take;
    offset = 0;
  }
  return position;
}

// Copies n bytes at offset of the chain to out; false (out partly written) when the chain is shorter.
bool copy_from_chain_pieces(const mem::Block* head, std::size_t offset, std::byte* out, std::size_t n) noexcept;
// Copies n bytes from in to offset of the chain; false when the chain is shorter.
bool copy_to_chain_pieces(const mem::Block* head, std::size_t offset, const std::byte* in, std::size_t n) noexcept;

// The same, inline for the common case of bytes within the head block: a header of a known size is then copied
// with a few moves instead of a call per frame (the data headers of small frames, tens of millions a second).
inline bool within_head(const mem::Block* head, std::size_t offset, std::size_t n) noexcept {
  return head != nullptr && offset <= head->size() && n <= head->size() - offset;
}
inline bool copy_from_chain(const mem::Block* head, std::size_t offset, std::byte* out, std::size_t n) noexcept {
  if (within_head(head, offset, n)) {
    std::memcpy(out, head->data() + offset, n);
    return true;
  }
  return copy_from_chain_pieces(head, offset, out, n);
}
inline bool copy_to_chain(const mem::Block* head, std::size_t offset, const std::byte* in, std::size_t n) noexcept {
  if (within_head(head, offset, n)) {
    std::memcpy(head->data() + offset, in, n);
    return true;
  }
  return copy_to_chain_pieces(head, offset, in, n);
}

}  // namespace daqx::nton
