// The frames between a stream's publisher and its subscribing applications (docs/monitoring.md, "Protocol"):
// their function codes, payload layouts (little-endian, after the 32-byte frame header) and one parse function
// per message that takes any bytes and returns the message or the reason it is none.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "daqx/streams/policy.hpp"

namespace daqx::streams {

namespace function {
inline constexpr std::uint16_t control = 0x0D01;  // subscriber -> publisher: subscribe, acknowledge, unsubscribe
inline constexpr std::uint16_t reply = 0x0D02;    // publisher -> subscriber: accepted, refused, ended
inline constexpr std::uint16_t data = 0x0D03;     // publisher -> subscriber: one event
}  // namespace function

enum class ControlKind : std::uint8_t { subscribe = 1, acknowledge = 2, unsubscribe = 3 };
enum class ReplyKind : std::uint8_t { accepted = 1, refused = 2, ended = 3 };

// control: u8 kind, u8 policy kind, u16 name length, u32 every, u32 depth, u32 0, f64 max_rate, u64 subscription,
// u64 sequence, then the name (subscribe only; the other kinds carry none).
struct ControlMessage {
  ControlKind kind = ControlKind::subscribe;
  Policy policy;               // subscribe
  std::uint64_t subscription = 0;  // acknowledge, unsubscribe: the id the publisher's accepted reply gave
  std::uint64_t sequence = 0;      // acknowledge: every record up to this one was consumed
  std::string stream;              // subscribe
};
inline constexpr std::size_t kControlBytes = 40;

// reply: u8 kind, u8 0, u16 reason length, u32 0, u64 subscription, then the reason (at most kMaxReason bytes).
struct ReplyMessage {
  ReplyKind kind = ReplyKind::accepted;
  std::uint64_t subscription = 0;
  std::string reason;  // refused, ended: why (printable)
};
inline constexpr std::size_t kReplyBytes = 16;
inline constexpr std::size_t kMaxReason = 256;

// data: u64 subscription, u64 sequence, u64 key, u64 dropped, then the event's bytes.
struct DataHeader {
  std::uint64_t subscription = 0;
  std::uint64_t sequence = 0;  // 1, 2, ... within the subscription, without gaps; 0: a probe, with no event
  std::uint64_t key = 0;
  std::uint64_t dropped = 0;  // events the subscription's policy dropped before this one, in all
};
inline constexpr std::size_t kDataHeaderBytes = 32;

template <typename Message>
struct Parsed {
  std::optional<Message> message;
  std::string error;  // empty exactly when message holds one
};

// Bytes of a control message, and writing one into `out` (control_bytes(message) long).
std::size_t control_bytes(const ControlMessage& message) noexcept;
void encode(const ControlMessage& message, std::byte* out) noexcept;
Parsed<ControlMessage> parse_control(std::span<const std::byte> payload);

std::size_t reply_bytes(const ReplyMessage& message) noexcept;  // the reason cut at kMaxReason
void encode(const ReplyMessage& message, std::byte* out) noexcept;
Parsed<ReplyMessage> parse_reply(std::span<const std::byte> payload);

void encode(const DataHeader& header, std::byte* out) noexcept;
// The header at the start of a data payload (the event's bytes follow it).
Parsed<DataHeader> parse_data(std::span<const std::byte> payload);

}  // namespace daqx::streams
