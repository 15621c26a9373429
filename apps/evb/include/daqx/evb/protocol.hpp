// The event builder's messages: function codes and payload layouts of the frames between EvM, RUs and BUs.
// docs/evb-protocol.md describes them with a sequence diagram; this header is the reference. All fields are little-
// endian, written and read through ByteWriter / ByteReader (bounds-checked, never a struct cast).
//
// The flow (CMS event builder): a BU sends the EvM a Request with the resource slots it has free; the EvM
// gives each slot a batch of consecutive event ids, sends the BU the trigger fragments of that batch (the EvM
// is itself a readout unit) and tells every RU in an Allocate message; each RU sends the BU its super-
// fragments of the batch in Fragment blocks; the BU builds the events, outputs them and, in its next
// Request, gives the slot back with the batch as a discard. The EvM's Control frames carry liveness
// (heartbeats), resets of a BU's generation, peers going down, the end of the run and run failure.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "daqx/api/frame.hpp"

namespace daqx::evb {

namespace function {
inline constexpr std::uint16_t request = 0x0E01;    // BU -> EvM: free slots, discards, liveness
inline constexpr std::uint16_t allocate = 0x0E02;   // EvM -> RU: which BU slot gets which events
inline constexpr std::uint16_t fragments = 0x0E03;  // RU or EvM -> BU: a block of super-fragment pieces
inline constexpr std::uint16_t ru_status = 0x0E04;  // RU -> EvM: liveness and counts
inline constexpr std::uint16_t control = 0x0E05;    // EvM -> BU, RU: heartbeat, reset, down, end, failure;
                                                    // RU -> EvM: bu_down when its connection to a BU failed
}  // namespace function

// Little-endian encoding into a window with a cursor; a write past the end sets overflow and writes nothing.
class ByteWriter {
 public:
  ByteWriter(std::byte* at, std::size_t size) noexcept : at_(at), size_(size) {}
  template <typename T>
  void put(T value) noexcept {
    if (!fits(sizeof(T))) return;
    daqx::detail::store_le<T>(at_ + used_, value);
    used_ += sizeof(T);
  }
  void put_bytes(const void* data, std::size_t n) noexcept {
    if (!fits(n)) return;
    if (n != 0) std::memcpy(at_ + used_, data, n);
    used_ += n;
  }
  void pad_to(std::size_t alignment) noexcept {
    while (used_ % alignment != 0 && !overflow_) put<std::uint8_t>(0);
  }
  std::size_t used() const noexcept { return used_; }
  std::size_t room() const noexcept { return size_ - used_; }
  bool overflow() const noexcept { return overflow_; }
  std::byte* cursor() const noexcept { return at_ + used_; }
  void skip(std::size_t n) noexcept {  // bytes written by someone else at cursor()
    if (fits(n)) used_ += n;
  }

 private:
  bool fits(std::size_t n) noexcept {
    if (overflow_ || n > size_ - used_) overflow_ = true;
    return !overflow_;
  }
  std::byte* at_;
  std::size_t size_;
  std::size_t used_ = 0;
  bool overflow_ = false;
};

// The reading side: a read past the end sets truncated and returns 0; callers check ok() once at the end.
class ByteReader {
 public:
  ByteReader(const std::byte* at, std::size_t size) noexcept : at_(at), size_(size) {}
  template <typename T>
  T get() noexcept {
    if (!fits(sizeof(T))) return T{};
    T value = daqx::detail::load_le<T>(at_ + used_);
    used_ += sizeof(T);
    return value;
  }
  const std::byte* take(std::size_t n) noexcept {  // n bytes in place, or nullptr
    if (!fits(n)) return nullptr;
    const std::byte* p = at_ + used_;
    used_ += n;
    return p;
  }
  void align_to(std::size_t alignment) noexcept {
    const std::size_t rest = used_ % alignment;
    if (rest != 0) take(alignment - rest);
  }
  bool ok() const noexcept { return !truncated_; }
  std::size_t remaining() const noexcept { return size_ - used_; }
  std::size_t used() const noexcept { return used_; }

 private:
  bool fits(std::size_t n) noexcept {
    if (truncated_ || n > size_ - used_) truncated_ = true;
    return !truncated_;
  }
  const std::byte* at_;
  std::size_t size_;
  std::size_t used_ = 0;
  bool truncated_ = false;
};

// ---- Request (BU -> EvM) -----------------------------------------------------------------------------------
// Sent when slots are freed, and every requestInterval as a heartbeat (with no slots, if none are free).
// Credits are given once: a slot id in free_slots is the BU's promise that the slot is empty; the EvM owns
// it until the batch it assigned comes back as a discard. A Request whose generation or incarnation is not
// the EvM's current one for this BU (a new BU, one that was dropped, or one that restarted) is answered with a
// Control reset (at most one per 50 ms per BU) and otherwise ignored; a BU that restarted while taking part is
// dropped first (its events counted lost). A BU ignores a reset to the generation it already has.
struct Discard {
  std::uint64_t first_event = 0;  // the batch as assigned
  std::uint32_t count = 0;
  std::uint32_t slot = 0;
  std::uint32_t incomplete = 0;   // events of the batch built without every contributor
  std::uint32_t corrupt = 0;      // events of the batch that failed the integrity checks
};

namespace output_state {
inline constexpr std::uint16_t running = 0;    // every free slot is offered
inline constexpr std::uint16_t throttled = 1;  // output backlog above throttleLevel: fewer slots offered
inline constexpr std::uint16_t blocked = 2;    // output backlog above blockLevel: no slots offered
}  // namespace output_state

// Request payload, request_bytes(r) = 32 + 4n + 24m bytes:
//    0  u32  run                    18  u16  state
//    4  u32  generation             20  u32  total_slots
//    8  u64  incarnation            24  u32  free slot count n
//   16  u16  priority               28  u32  free_slots[n]
//   28 + 4n  u32  discard count m
//   32 + 4n  Discard[m], 24 bytes each: +0 u64 first_event, +8 u32 count, +12 u32 slot, +16 u32 incomplete,
//            +20 u32 corrupt
struct Request {
  std::uint32_t run = 0;          // the EvM's run as the BU last heard it; 0: not yet
  std::uint32_t generation = 0;   // the BU's generation as the EvM set it in its last reset; 0: none yet
  std::uint64_t incarnation = 0;  // random per BU enable: tells a restarted BU from the one before
  std::uint16_t priority = 0;     // 0..255, falls as the BU fills; the EvM serves the highest first
  std::uint16_t state = output_state::running;
  std::uint32_t total_slots = 0;
  std::vector<std::uint32_t> free_slots;
  std::vector<Discard> discards;
};

// ---- Allocate (EvM -> RU) ----------------------------------------------------------------------------------
// One frame carries up to a frame's worth of assignments, in the order the EvM made them.
struct Assignment {
  Tid bu = kNoTid;
  std::uint32_t generation = 0;  // the BU's generation when assigned: an RU drops work for older ones
  std::uint32_t slot = 0;
  std::uint32_t count = 0;
  std::uint64_t first_event = 0;
};
// Assignment, 24 bytes: 0 u32 bu, 4 u32 generation, 8 u32 slot, 12 u32 count, 16 u64 first_event.
inline constexpr std::size_t kAssignmentBytes = 24;

// Allocate payload, 8 + 24 * n bytes: 0 u32 run, 4 u32 assignment count (n), 8 Assignment[n].
struct Allocate {
  std::uint32_t run = 0;
  std::vector<Assignment> assignments;
};
// The payload bytes of an Allocate of n assignments.
constexpr std::size_t allocate_bytes(std::size_t assignments) noexcept { return 8 + kAssignmentBytes * assignments; }

// ---- Fragments (RU or EvM -> BU) ---------------------------------------------------------------------------
// A block: BlockHeader, then piece_count pieces, each a PieceHeader and `size` bytes padded to 8. A piece is
// a contiguous part of one contributor's super-fragment of one event; a super-fragment larger than the room
// left in a block continues in the next block(s) from the same contributor, in order (offset says where).
// Every block of a batch carries the batch, so the BU knows the slot's events from whichever block comes first.
namespace block_flags {
inline constexpr std::uint32_t last_of_batch = 0x1;  // this contributor has sent everything of this batch
}

struct BlockHeader {
  std::uint32_t run = 0;
  std::uint32_t generation = 0;
  std::uint32_t slot = 0;
  std::uint32_t batch_count = 0;
  std::uint64_t batch_first_event = 0;
  std::uint32_t piece_count = 0;
  std::uint32_t flags = 0;
};
// BlockHeader, 32 bytes: 0 u32 run, 4 u32 generation, 8 u32 slot, 12 u32 batch_count, 16 u64 batch_first_event,
// 24 u32 piece_count, 28 u32 flags.
inline constexpr std::size_t kBlockHeaderBytes = 32;

struct PieceHeader {
  std::uint64_t event = 0;
  std::uint32_t superfragment_size = 0;  // this contributor's whole super-fragment of the event, bytes
  std::uint32_t offset = 0;              // where this piece starts in it
  std::uint32_t size = 0;                // bytes in this piece
  std::uint32_t reserved = 0;
};
// PieceHeader, 24 bytes: 0 u64 event, 8 u32 superfragment_size, 12 u32 offset, 16 u32 size, 20 u32 reserved.
inline constexpr std::size_t kPieceHeaderBytes = 24;
inline constexpr std::size_t kPieceAlignment = 8;

// ---- RU status (RU -> EvM) ---------------------------------------------------------------------------------
// Every heartbeatInterval while enabled: the EvM assigns nothing until it has heard from every RU it needs,
// and declares an RU dead after ruTimeout without one.
// RuStatus payload, 32 bytes: 0 u32 run, 4 u32 reserved (0: keeps the counters 8-aligned), 8 u64 incarnation,
// 16 u64 fragments_sent, 24 u64 bytes_sent.
struct RuStatus {
  std::uint32_t run = 0;          // the EvM's run as the RU last heard it; 0: not yet
  std::uint64_t incarnation = 0;  // random per RU enable
  std::uint64_t fragments_sent = 0;
  std::uint64_t bytes_sent = 0;
};

// ---- Control (EvM -> BU, RU) -------------------------------------------------------------------------------
enum class ControlKind : std::uint16_t {
  heartbeat = 1,   // the EvM is alive and its run is `run`
  reset = 2,       // to one BU: forget every slot, take `generation`, offer all slots again
  bu_down = 3,     // to RUs: BU `subject` was dropped; drop its work of generations below `generation`.
                   // From an RU to the EvM: blocks to BU `subject` of `generation` were lost with the connection
  ru_down = 4,     // to BUs (and RUs): RU `subject` is gone; build events without it, flagged incomplete
  end_of_run = 5,  // the EvM stopped and drained: stop watching it
  run_failed = 6,  // the run failed; `text` says why: every unit goes to Failed with it
};

// Control payload, control_bytes(c) = 20 + text bytes: 0 u16 kind, 2 u16 reserved (0), 4 u32 run,
// 8 u32 generation, 12 u32 subject, 16 u32 text length (n), 20 text[n] (no terminator). A kind not listed
// above is refused by the decoder, and by the encoder.
struct Control {
  ControlKind kind = ControlKind::heartbeat;
  std::uint32_t run = 0;
  std::uint32_t generation = 0;
  Tid subject = kNoTid;
  std::string text;
};

// Encoders write the payload (after the frame header) and return the bytes used, or nothing if `room` is
// too small; decoders return nothing for a payload that is short, inconsistent or has trailing bytes.
std::size_t request_bytes(const Request& r) noexcept;
std::optional<std::size_t> encode(const Request& r, std::byte* out, std::size_t room) noexcept;
std::optional<Request> decode_request(const std::byte* in, std::size_t size);

// How many assignments fit in an Allocate payload of `room` bytes.
std::size_t assignments_that_fit(std::size_t room) noexcept;
std::optional<std::size_t> encode(const Allocate& a, std::byte* out, std::size_t room) noexcept;
// The same, of assignments held elsewhere (the EvM's log of them): no vector made per frame.
std::optional<std::size_t> encode_allocate(std::uint32_t run, std::span<const Assignment> assignments, std::byte* out,
                                           std::size_t room) noexcept;
std::optional<Allocate> decode_allocate(const std::byte* in, std::size_t size);

std::optional<std::size_t> encode(const RuStatus& s, std::byte* out, std::size_t room) noexcept;
std::optional<RuStatus> decode_ru_status(const std::byte* in, std::size_t size);

std::size_t control_bytes(const Control& c) noexcept;
std::optional<std::size_t> encode(const Control& c, std::byte* out, std::size_t room) noexcept;
std::optional<Control> decode_control(const std::byte* in, std::size_t size);

void encode(const BlockHeader& h, ByteWriter& out) noexcept;
BlockHeader decode_block_header(ByteReader& in) noexcept;
void encode(const PieceHeader& h, ByteWriter& out) noexcept;
PieceHeader decode_piece_header(ByteReader& in) noexcept;

std::string_view to_string(ControlKind kind) noexcept;

}  // namespace daqx::evb
