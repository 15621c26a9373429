// Copies between a flat buffer and a byte range of a Ref chain (for headers that straddle two blocks).
#include "chain_logic.hpp"

#include <cstring>

namespace daqx::nton {

bool copy_from_chain_pieces(const mem::Block* head, std::size_t offset, std::byte* out, std::size_t n) noexcept {
  const std::size_t copied = for_each_piece(head, offset, n, [out](std::span<std::byte> piece, std::size_t at) {
    std::memcpy(out + at, piece.data(), piece.size());
  });
  return copied == n;
}

bool copy_to_chain_pieces(const mem::Block* head, std::size_t offset, const std::byte* in, std::size_t n) noexcept {
  const std::size_t copied = for_each_piece(head, offset, n, [in](std::span<std::byte> piece, std::size_t at) {
    std::memcpy(piece.data(), in + at, piece.size());
  });
  return copied == n;
}

}  // namespace daqx::nton
