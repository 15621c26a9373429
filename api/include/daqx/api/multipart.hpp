// Multipart messages: one frame that carries several Refs (a header part and payload parts) sent and delivered
// together without a copy. The frame has frame_flags::multipart and, at the start of its payload, a table of
// the parts' lengths; the parts' bytes follow back to back (docs/wire-format.md). To a receiver that does not
// know multipart it is an ordinary frame, so peers that use it and peers that do not work together.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "daqx/api/frame.hpp"

namespace daqx {

// The most parts one message carries (ALICE sends 1000-part messages).
inline constexpr std::size_t kMaxParts = 4096;

// Byte offsets in the part table, from the start of the payload (docs/wire-format.md).
namespace part_table_offset {
inline constexpr std::size_t count = 0;     // u32: parts, 1..kMaxParts
inline constexpr std::size_t reserved = 4;  // u32, zero
inline constexpr std::size_t lengths = 8;   // u32 per part, in order
}  // namespace part_table_offset

// Bytes of the table of a message of `parts` parts.
constexpr std::size_t part_table_size(std::size_t parts) noexcept {
  return part_table_offset::lengths + 4 * parts;
}

// What is wrong with a multipart message, on either side.
enum class MultipartCheck {
  ok,
  not_multipart,     // the frame has no frame_flags::multipart
  table_cut,         // the frame ends inside the part table
  bad_count,         // the table's count is 0 or above kMaxParts (receiving), or so many parts were given (sending)
  reserved_set,      // the table's reserved word is not zero
  lengths_mismatch,  // the parts' lengths do not add up to the payload after the table
  shared_block,      // a shared block (Ref::share) other than the message's last: the chain cannot be split or linked
  empty_block,       // a part to send has a block with an empty window (the parts could not be told apart again)
  too_large,         // the message would be longer than a frame's 32-bit length
  no_views,          // receiving: the pool of the frame's blocks has no view descriptor left (Ref::view)
};
std::string_view to_string(MultipartCheck check) noexcept;

// ---- Sending (ApplicationContext::send_parts does all of it; a transport test builds frames with it) --------

// Whether parts can go as one message: 1..kMaxParts parts, each an empty Ref (a part of 0 bytes) or a chain of
// blocks with non-empty windows, no shared block but the last block of the last non-empty part, and a total that
// fits a frame.
MultipartCheck check_parts(std::span<const mem::Ref> parts) noexcept;

// Writes the table of parts into head from byte kFrameHeaderSize on (head: kFrameHeaderSize +
// part_table_size(parts.size()) bytes, one block or a chain, as allocate_frame gives it).
void write_part_table(std::span<const mem::Ref> parts, mem::Ref& head) noexcept;

// Links the parts, in order, after head (header and table, written): head becomes the message's frame and the
// parts are empty. The parts must have passed check_parts. O(blocks of the message).
void link_parts(mem::Ref& head, std::span<mem::Ref> parts) noexcept;

// The inverse of link_parts on a frame it made, using the table the frame carries: each part back into its Ref
// of parts (parts.size() as linked), and frame is the head again. For a send that was not taken (would_block,
// no_route), so that the caller holds its parts as it gave them.
void unlink_parts(mem::Ref& frame, std::span<mem::Ref> parts) noexcept;

// ---- Receiving --------------------------------------------------------------------------------------------

// Splits a received multipart frame into its parts, in order, each its own Ref, without copying: a part that is
// whole blocks of the chain (ptshm and local delivery pass the sender's blocks) gets those blocks, any other part
// views (Ref::view) of the blocks it lies in, a chain of them where it spans blocks; a part of 0 bytes is an
// empty Ref. On ok, frame.data is released (the views hold what they show) and frame.header is kept. On any
// other result the frame is as it was and parts is empty: nothing is lost (no_views: the pool's views come back
// as frames are released, so the handler may keep the frame and try again, or take it whole).
// parts is the caller's, kept from message to message, so that splitting allocates nothing in steady state.
MultipartCheck take_parts(Frame& frame, std::vector<mem::Ref>& parts);

}  // namespace daqx
