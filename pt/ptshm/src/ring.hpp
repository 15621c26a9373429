// The shared segment of one ptshm connection: a header and two single-producer single-consumer rings, frames
// (sender to receiver: block references) and returns (receiver to sender: blocks given back).
//
// Both processes map the segment, and neither trusts the other: each side keeps its own copy of the index it
// owns (the producer its tail, the consumer its head), only ever writes that one, and checks what it reads of
// the other (tail - head within the ring). Entries are copied out before they are checked, so the peer cannot
// change one between the check and its use.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>

namespace daqx::ptshm {

inline constexpr std::uint32_t kSegmentMagic = 0x48535144;  // "DQSH"
inline constexpr std::uint32_t kSegmentVersion = 1;

// One block of a frame, by reference into one of the sender's chunks.
struct FrameEntry {
  std::uint32_t chunk = 0;   // the sender's chunk id (announced over the socket with its memfd)
  std::uint32_t flags = 0;   // kLastBlock on the frame's last block
  std::uint64_t offset = 0;  // of the block's data window in the chunk
  std::uint32_t length = 0;  // of the data window
  std::uint32_t token = 0;   // the sender's in-flight slot: given back in a ReturnEntry, once per block
};
inline constexpr std::uint32_t kLastBlock = 1;
// On a frame's only entry: the block holds several whole frames back to back (a pack), each with its header.
inline constexpr std::uint32_t kPacked = 2;

// One block the receiver is done with.
struct ReturnEntry {
  std::uint32_t token = 0;
  std::uint32_t reserved = 0;
};

// The indices of one ring, each on its own cache line. consumer_sleeping: the consumer is about to sleep in its
// eventfd; a producer that sees it after publishing clears it and writes the eventfd (one system call only when
// the other side sleeps).
struct RingControl {
  alignas(64) std::atomic<std::uint64_t> head{0};  // written by the consumer
  alignas(64) std::atomic<std::uint64_t> tail{0};  // written by the producer
  alignas(64) std::atomic<std::uint32_t> consumer_sleeping{0};
};

struct SegmentHeader {
  std::uint32_t magic = kSegmentMagic;
  std::uint32_t version = kSegmentVersion;
  std::uint32_t ring_entries = 0;  // in each ring, a power of two
  std::uint32_t reserved = 0;
  alignas(64) RingControl frames;
  alignas(64) RingControl returns;
};

// Where everything is in a segment with rings of `entries` entries.
struct SegmentLayout {
  std::size_t frames_at = 0;
  std::size_t returns_at = 0;
  std::size_t bytes = 0;
  static SegmentLayout of(std::uint32_t entries) noexcept {
    SegmentLayout layout;
    layout.frames_at = (sizeof(SegmentHeader) + 63) / 64 * 64;
    layout.returns_at = layout.frames_at + entries * sizeof(FrameEntry);
    layout.bytes = (layout.returns_at + entries * sizeof(ReturnEntry) + 4095) / 4096 * 4096;
    return layout;
  }
};

// Entries ahead of the one written or read that are fetched in advance (four cache lines of frame entries).
inline constexpr std::uint64_t kPrefetchAhead = 8;

// The producer's side of a ring: tail is ours, head is read (and checked) from the consumer.
template <typename Entry>
class RingProducer {
 public:
  RingProducer() = default;
  RingProducer(RingControl* control, Entry* entries, std::uint32_t capacity) noexcept
      : control_(control),
        entries_(entries),
        capacity_(capacity),
        tail_(control->tail.load(std::memory_order_relaxed)) {}

  // Entries that can be written now; nullopt when the consumer's head is impossible (a broken or hostile peer).
  std::optional<std::uint64_t> room() noexcept {
    const std::uint64_t head = control_->head.load(std::memory_order_acquire);
    if (tail_ - head > capacity_) return std::nullopt;
    return capacity_ - (tail_ - head);
  }
  // Writes one entry (room() said there is space); the consumer sees it after publish().
  void write(const Entry& entry) noexcept {
    // The entries a few lines ahead, for writing: the consumer read them last, on its core, and the fetch of
    // each line back overlaps the frames in between instead of stalling this write.
    __builtin_prefetch(&entries_[(tail_ + kPrefetchAhead) & (capacity_ - 1)], 1, 3);
    entries_[tail_++ & (capacity_ - 1)] = entry;
  }
  // Makes what was written visible; true when the consumer said it sleeps (the caller wakes it).
  bool publish() noexcept {
    control_->tail.store(tail_, std::memory_order_release);
    // Pairs with the consumer's fence between raising its flag and looking at tail once more (Dekker): either it
    // sees the new tail, or we see its flag.
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (control_->consumer_sleeping.load(std::memory_order_relaxed) == 0) return false;
    return control_->consumer_sleeping.exchange(0, std::memory_order_acq_rel) != 0;
  }
  explicit operator bool() const noexcept { return control_ != nullptr; }

 private:
  RingControl* control_ = nullptr;
  Entry* entries_ = nullptr;
  std::uint64_t capacity_ = 0;
  std::uint64_t tail_ = 0;
};

// The consumer's side: head is ours, tail is read (and checked) from the producer.
template <typename Entry>
class RingConsumer {
 public:
  RingConsumer() = default;
  RingConsumer(RingControl* control, const Entry* entries, std::uint32_t capacity) noexcept
      : control_(control),
        entries_(entries),
        capacity_(capacity),
        head_(control->head.load(std::memory_order_relaxed)) {}

  // Entries ready to read; nullopt when the producer's tail is impossible.
  std::optional<std::uint64_t> available() noexcept {
    const std::uint64_t tail = control_->tail.load(std::memory_order_acquire);
    if (tail - head_ > capacity_) return std::nullopt;
    return tail - head_;
  }
  // A copy of entry i (0: the oldest ready), taken before anything in it is checked.
  Entry read(std::uint64_t i) const noexcept {
    __builtin_prefetch(entries_ + ((head_ + i + kPrefetchAhead) & (capacity_ - 1)), 0, 3);
    Entry copy;
    std::memcpy(&copy, entries_ + ((head_ + i) & (capacity_ - 1)), sizeof copy);
    return copy;
  }
  void consume(std::uint64_t count) noexcept { head_ += count; }
  // Gives the consumed entries' room back to the producer.
  void release() noexcept { control_->head.store(head_, std::memory_order_release); }
  // Before sleeping: raise the flag, then look once more. True when it may sleep (nothing arrived meanwhile).
  bool prepare_to_sleep() noexcept {
    control_->consumer_sleeping.store(1, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_seq_cst);
    const std::optional<std::uint64_t> ready = available();
    if (ready && *ready == 0) return true;
    control_->consumer_sleeping.store(0, std::memory_order_relaxed);
    return false;
  }
  void awake() noexcept { control_->consumer_sleeping.store(0, std::memory_order_relaxed); }
  explicit operator bool() const noexcept { return control_ != nullptr; }

 private:
  RingControl* control_ = nullptr;
  const Entry* entries_ = nullptr;
  std::uint64_t capacity_ = 0;
  std::uint64_t head_ = 0;
};

}  // namespace daqx::ptshm
