// Credit flow control shared by the transports that send messages into pre-posted receive buffers (ptofi,
// ptibv), apart from any network library so that it can be tested alone.
//
// On one connection the sender's messages land in the receiver's pre-posted buffers in posting order.
// The receiver tells the sender, in small credit messages going the other way, how many buffers it has
// posted since the connection opened (a running total, so a lost or reordered update cannot confuse
// anyone) and how large they are. The sender never has more messages outstanding than that: no message
// ever finds the receiver without a buffer (no receiver-not-ready retries, no unbounded provider queues).
#pragma once

#include <cstddef>
#include <cstdint>

#include "daqx/api/frame.hpp"

namespace daqx::pt {

// The credit message, receiver -> sender, little-endian: magic, buffer size, buffers posted in total.
inline constexpr std::uint32_t kCreditMagic = 0x52435144;  // "DQCR"
inline constexpr std::size_t kCreditMessageSize = 16;

struct CreditMessage {
  std::uint32_t buffer_size = 0;
  std::uint64_t posted_total = 0;
};

void encode_credit(const CreditMessage& message, std::byte* out) noexcept;
// False when the bytes are not a credit message (wrong length or magic, or a zero buffer size).
bool decode_credit(const std::byte* in, std::size_t length, CreditMessage& out) noexcept;

// The sender's view of one connection's credits.
class SendCredits {
 public:
  // No message may go before the first grant: it says how large the receiver's buffers are.
  bool ready() const noexcept { return buffer_size_ != 0; }
  std::uint32_t buffer_size() const noexcept { return buffer_size_; }
  std::uint64_t available() const noexcept { return granted_ > used_ ? granted_ - used_ : 0; }
  std::uint64_t used() const noexcept { return used_; }
  // A credit message: totals only grow, so an older message arriving late changes nothing.
  void grant(const CreditMessage& message) noexcept {
    if (message.posted_total > granted_) granted_ = message.posted_total;
    buffer_size_ = message.buffer_size;
  }
  void consume() noexcept { ++used_; }

 private:
  std::uint64_t granted_ = 0;
  std::uint64_t used_ = 0;
  std::uint32_t buffer_size_ = 0;
};

// The receiver's view: buffers posted, messages seen, what it told the sender.
class ReceiveCredits {
 public:
  // threshold: report at the latest when this many new buffers are posted (depth / 4 is a good choice).
  explicit ReceiveCredits(std::uint64_t threshold) : threshold_(threshold == 0 ? 1 : threshold) {}
  void posted(std::uint64_t buffers = 1) noexcept { posted_ += buffers; }
  void received() noexcept { ++received_; }
  std::uint64_t posted_total() const noexcept { return posted_; }
  std::uint64_t unreported() const noexcept { return posted_ - reported_; }
  // Buffers posted that no message has filled yet: at most what the sender may still send.
  std::uint64_t unfilled() const noexcept { return posted_ - received_; }
  // A report is due when enough new buffers have piled up, or, sooner, when the sender is running short
  // as far as we know: otherwise a receiver that can post only a few buffers (its pool is nearly empty)
  // and waits for more data to free any would wait forever.
  bool report_due() const noexcept {
    if (posted_ == reported_) return false;
    std::uint64_t sender_left = reported_ > received_ ? reported_ - received_ : 0;
    return unreported() >= threshold_ || sender_left < threshold_;
  }
  // The total to send; from now on it counts as told.
  std::uint64_t report() noexcept {
    reported_ = posted_;
    return posted_;
  }

 private:
  std::uint64_t threshold_;
  std::uint64_t posted_ = 0;
  std::uint64_t received_ = 0;
  std::uint64_t reported_ = 0;
};

}  // namespace daqx::pt
