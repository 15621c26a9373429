// Multipart messages: the part table written and read across the blocks of a chain, the parts linked into one
// frame and cut out of it again, without copying a byte of a part.
#include "daqx/api/multipart.hpp"

#include <algorithm>
#include <limits>
#include <utility>

namespace daqx {
namespace {

// A position in a chain's bytes (the blocks' windows in order) that reads or writes across block boundaries: the
// table may straddle blocks (a chained head, or a frame that arrived in pieces).
class ChainCursor {
 public:
  explicit ChainCursor(const mem::Block* block) noexcept : block_(block) {}

  // Each moves on by n bytes; false (and the cursor spent) when the chain ends first.
  bool skip(std::size_t n) noexcept {
    return walk(n, [](std::byte*, std::size_t, std::size_t) {});
  }
  bool read_u32(std::uint32_t& value) noexcept {
    std::byte bytes[4];
    if (!walk(4, [&](std::byte* at, std::size_t piece, std::size_t done) { std::copy_n(at, piece, bytes + done); }))
      return false;
    value = detail::load_le<std::uint32_t>(bytes);
    return true;
  }
  bool write_u32(std::uint32_t value) noexcept {
    std::byte bytes[4];
    detail::store_le<std::uint32_t>(bytes, value);
    return walk(4, [&](std::byte* at, std::size_t piece, std::size_t done) { std::copy_n(bytes + done, piece, at); });
  }

 private:
  // Calls each(window bytes, piece, bytes done before) for the next n bytes, block by block.
  template <typename Each>
  bool walk(std::size_t n, Each each) noexcept {
    std::size_t done = 0;
    while (done < n) {
      if (block_ == nullptr) return false;
      if (at_ == block_->size()) {
        block_ = block_->next();
        at_ = 0;
        continue;
      }
      const std::size_t piece = std::min(n - done, block_->size() - at_);
      each(block_->data() + at_, piece, done);
      at_ += piece;
      done += piece;
    }
    return true;
  }

  const mem::Block* block_;
  std::size_t at_ = 0;
};

// A block inside a chain another Ref owns, held for one call as the head of a Ref of its own (the chain keeps
// owning it): Ref's operations act on a head block, and this lets them act on any block of a chain in O(1).
class BorrowedBlock {
 public:
  explicit BorrowedBlock(const mem::Block* block) noexcept
      : ref_(mem::Ref::from_raw(const_cast<mem::Block*>(block))) {}
  ~BorrowedBlock() { (void)std::move(ref_).into_raw(); }  // still the chain's
  BorrowedBlock(const BorrowedBlock&) = delete;
  BorrowedBlock& operator=(const BorrowedBlock&) = delete;
  mem::Ref& operator*() noexcept { return ref_; }
  mem::Ref* operator->() noexcept { return &ref_; }

 private:
  mem::Ref ref_;
};

// Cuts the chain after block (not shared unless it is the last); the blocks after it.
mem::Ref cut_after(const mem::Block* block) noexcept {
  if (block->next() == nullptr) return {};
  return BorrowedBlock(block)->detach_next();
}

// A chain grown at its end in O(1) per piece (Ref::append walks from the head).
class ChainBuilder {
 public:
  void add(mem::Ref&& piece) noexcept {
    if (!piece) return;
    const mem::Block* piece_last = piece.head();
    while (piece_last->next() != nullptr) piece_last = piece_last->next();
    if (!chain_) {
      chain_ = std::move(piece);
    } else {
      BorrowedBlock last(last_);
      last->append(std::move(piece));
    }
    last_ = piece_last;
  }
  // The first block, taken off the chain.
  mem::Ref take_front() noexcept {
    mem::Ref front = std::move(chain_);
    if (front) chain_ = cut_after(front.head());
    if (!chain_) last_ = nullptr;
    return front;
  }
  mem::Ref take_all() noexcept {
    last_ = nullptr;
    return std::move(chain_);
  }

 private:
  mem::Ref chain_;
  const mem::Block* last_ = nullptr;
};

// What take_parts learned from the table: where the parts' bytes begin (a block and an offset in its window: the
// block that holds the table's end, which stays with the frame) and a cursor on the lengths.
struct PartLayout {
  std::uint32_t count = 0;
  const mem::Block* table_end = nullptr;
  std::size_t data_offset = 0;
  ChainCursor lengths{nullptr};
};

MultipartCheck read_layout(const Frame& frame, PartLayout& layout) noexcept {
  if ((frame.header.flags & frame_flags::multipart) == 0) return MultipartCheck::not_multipart;
  if (!frame.data) return MultipartCheck::table_cut;
  const mem::Block* head = frame.data.head();
  std::size_t total = 0;
  bool shared = false;
  for (const mem::Block* block = head; block != nullptr; block = block->next()) {
    total += block->size();
    // Its next blocks are its other owners' too: they cannot be taken apart.
    if (block->next() != nullptr && block->shared()) shared = true;
  }
  ChainCursor table(head);
  std::uint32_t reserved = 0;
  if (!table.skip(kFrameHeaderSize) || !table.read_u32(layout.count) || !table.read_u32(reserved))
    return MultipartCheck::table_cut;
  if (layout.count == 0 || layout.count > kMaxParts) return MultipartCheck::bad_count;
  if (reserved != 0) return MultipartCheck::reserved_set;
  const std::size_t data_start = kFrameHeaderSize + part_table_size(layout.count);
  if (total < data_start) return MultipartCheck::table_cut;
  layout.lengths = table;
  std::uint64_t sum = 0;
  for (std::uint32_t i = 0; i < layout.count; ++i) {
    std::uint32_t length = 0;
    (void)table.read_u32(length);  // inside the chain: checked above
    sum += length;
  }
  if (sum != total - data_start) return MultipartCheck::lengths_mismatch;
  if (shared) return MultipartCheck::shared_block;
  std::size_t before = 0;
  for (const mem::Block* block = head;; block = block->next()) {
    if (before + block->size() >= data_start) {
      layout.table_end = block;
      layout.data_offset = data_start - before;
      break;
    }
    before += block->size();
  }
  return MultipartCheck::ok;
}

// Walks the parts' bytes in order, from the layout's start in the table's last block on through data (the
// frame's blocks after it, one Ref each): step.piece(block, offset, length, whole) for each piece of a part within
// one block (whole: the piece is the block's entire window, and the block holds no table byte),
// step.leave(index) when the walk is done with data[index] (kTableEnd: the table's last block), and
// step.part_end(part) after each part. A block a part ends in is left before that part ends, so that a whole
// block joins its part. False when step.piece says so.
constexpr std::size_t kTableEnd = std::numeric_limits<std::size_t>::max();

template <typename Step>
bool walk_parts(PartLayout layout, std::span<mem::Ref> data, Step& step) noexcept {
  const mem::Block* block = layout.table_end;
  std::size_t index = kTableEnd;
  std::size_t at = layout.data_offset;
  auto leave = [&] {
    step.leave(index);
    index = index == kTableEnd ? 0 : index + 1;
    block = index < data.size() ? data[index].head() : nullptr;
    at = 0;
  };
  for (std::uint32_t part = 0; part < layout.count; ++part) {
    std::uint32_t remaining = 0;
    (void)layout.lengths.read_u32(remaining);
    while (remaining > 0) {
      while (block != nullptr && at == block->size()) leave();
      if (block == nullptr) return false;  // not reached: the lengths add up to the chain's bytes
      const std::size_t piece = std::min<std::size_t>(remaining, block->size() - at);
      const bool whole = index != kTableEnd && at == 0 && piece == block->size();
      if (!step.piece(block, at, piece, whole)) return false;
      at += piece;
      remaining -= static_cast<std::uint32_t>(piece);
    }
    if (block != nullptr && at == block->size()) leave();
    step.part_end(part);
  }
  return true;
}

// First walk: a view of every piece that is not a whole block, in order, nothing of the blocks changed.
struct MakeViews {
  ChainBuilder views;
  bool piece(const mem::Block* block, std::size_t offset, std::size_t length, bool whole) noexcept {
    if (whole) return true;
    mem::Ref view = BorrowedBlock(block)->view(offset, length);
    if (!view) return false;
    views.add(std::move(view));
    return true;
  }
  void leave(std::size_t) noexcept {}
  void part_end(std::uint32_t) noexcept {}
};

// Second walk, once every view exists: each whole block and each view into its part, in order.
struct AssembleParts {
  std::span<mem::Ref> data;
  ChainBuilder& views;
  std::span<mem::Ref> parts;
  ChainBuilder part{};
  bool whole_pending = false;

  bool piece(const mem::Block*, std::size_t, std::size_t, bool whole) noexcept {
    if (whole) {
      whole_pending = true;  // joins when the walk leaves it
    } else {
      part.add(views.take_front());
    }
    return true;
  }
  void leave(std::size_t index) noexcept {
    if (whole_pending) part.add(std::move(data[index]));
    whole_pending = false;
  }
  void part_end(std::uint32_t index) noexcept { parts[index] = part.take_all(); }
};

}  // namespace

std::string_view to_string(MultipartCheck check) noexcept {
  switch (check) {
    case MultipartCheck::ok: return "ok";
    case MultipartCheck::not_multipart: return "not a multipart frame (no multipart flag)";
    case MultipartCheck::table_cut: return "the frame ends inside its part table";
    case MultipartCheck::bad_count:
      static_assert(kMaxParts == 4096, "the text below names it");
      return "part count 0 or above the most parts a message carries (4096)";
    case MultipartCheck::reserved_set: return "the part table's reserved word is not zero";
    case MultipartCheck::lengths_mismatch: return "the part lengths do not add up to the payload after the table";
    case MultipartCheck::shared_block: return "a shared block before the message's last one";
    case MultipartCheck::empty_block: return "a part has a block with an empty window";
    case MultipartCheck::too_large: return "longer than a frame's 32-bit length";
    case MultipartCheck::no_views: return "no view descriptor left in the pool of the frame's blocks";
  }
  return "?";
}

MultipartCheck check_parts(std::span<const mem::Ref> parts) noexcept {
  if (parts.empty() || parts.size() > kMaxParts) return MultipartCheck::bad_count;
  std::size_t last = parts.size();  // the last part with bytes: only its last block may be shared
  for (std::size_t i = parts.size(); i-- > 0;) {
    if (parts[i]) {
      last = i;
      break;
    }
  }
  std::uint64_t total = kFrameHeaderSize + part_table_size(parts.size());
  for (std::size_t i = 0; i < parts.size(); ++i) {
    for (const mem::Block* block = parts[i].head(); block != nullptr; block = block->next()) {
      if (block->size() == 0) return MultipartCheck::empty_block;
      if (block->shared() && (i != last || block->next() != nullptr)) return MultipartCheck::shared_block;
      total += block->size();
    }
  }
  if (total > std::numeric_limits<std::uint32_t>::max()) return MultipartCheck::too_large;
  return MultipartCheck::ok;
}

void write_part_table(std::span<const mem::Ref> parts, mem::Ref& head) noexcept {
  ChainCursor table(head.head());
  bool fits = table.skip(kFrameHeaderSize) && table.write_u32(static_cast<std::uint32_t>(parts.size())) &&
              table.write_u32(0);
  for (const mem::Ref& part : parts) {
    if (!fits) break;
    fits = table.write_u32(part ? static_cast<std::uint32_t>(part.total_size()) : 0);
  }
  if (!fits) mem::report_misuse(mem::Misuse::bad_window, "a multipart head shorter than its part table");
}

void link_parts(mem::Ref& head, std::span<mem::Ref> parts) noexcept {
  // From the last part back, so that each append walks one part only.
  mem::Ref chain;
  for (std::size_t i = parts.size(); i-- > 0;) {
    if (!parts[i]) continue;
    if (chain) parts[i].append(std::move(chain));
    chain = std::move(parts[i]);
  }
  head.append(std::move(chain));
}

void unlink_parts(mem::Ref& frame, std::span<mem::Ref> parts) noexcept {
  ChainCursor lengths(frame.head());
  if (!lengths.skip(kFrameHeaderSize + part_table_offset::lengths)) return;
  // The head ends where the table does (link_parts appended the parts after it).
  std::size_t head_bytes = kFrameHeaderSize + part_table_size(parts.size());
  const mem::Block* head_last = frame.head();
  while (head_bytes > head_last->size() && head_last->next() != nullptr) {
    head_bytes -= head_last->size();
    head_last = head_last->next();
  }
  mem::Ref rest = cut_after(head_last);
  for (mem::Ref& part : parts) {
    std::uint32_t length = 0;
    (void)lengths.read_u32(length);
    if (length == 0 || !rest) continue;  // an empty part was an empty Ref
    // The part's blocks: their windows are never empty (check_parts), so its length says where it ends.
    const mem::Block* last = rest.head();
    for (std::size_t bytes = last->size(); bytes < length && last->next() != nullptr; bytes += last->size())
      last = last->next();
    mem::Ref after = cut_after(last);
    part = std::move(rest);
    rest = std::move(after);
  }
}

MultipartCheck take_parts(Frame& frame, std::vector<mem::Ref>& parts) {
  parts.clear();
  PartLayout layout;
  const MultipartCheck check = read_layout(frame, layout);
  if (check != MultipartCheck::ok) return check;
  // The blocks after the table's, one Ref each behind the parts' places in the caller's vector, taken apart before
  // any view of them exists (a block with views counts as shared: its chain could not change any more). The
  // table's blocks stay linked, for reading the lengths.
  parts.resize(layout.count);
  for (mem::Ref rest = cut_after(layout.table_end); rest;) {
    mem::Ref next = cut_after(rest.head());
    parts.push_back(std::move(rest));
    rest = std::move(next);
  }
  const std::span<mem::Ref> data = std::span(parts).subspan(layout.count);
  MakeViews views;
  if (!walk_parts(layout, data, views)) {
    // No view left: the views made go, then the blocks are linked again as they came.
    views.views.take_all().reset();
    mem::Ref chain;
    for (std::size_t i = data.size(); i-- > 0;) {
      if (chain) data[i].append(std::move(chain));
      chain = std::move(data[i]);
    }
    if (chain) BorrowedBlock(layout.table_end)->append(std::move(chain));
    parts.clear();
    return MultipartCheck::no_views;
  }
  AssembleParts assemble{data, views.views, std::span(parts).first(layout.count)};
  (void)walk_parts(layout, data, assemble);
  parts.resize(layout.count);  // the blocks that went into views only: the views hold them
  frame.data.reset();          // the header and table; their last block lives on in views of the first parts
  return MultipartCheck::ok;
}

}  // namespace daqx
