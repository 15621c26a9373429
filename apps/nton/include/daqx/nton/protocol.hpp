// The wire frames of the nton test applications: function codes and payload layouts, fixed and little-endian.
#pragma once

#include <cstddef>
#include <cstdint>

#include "daqx/api/frame.hpp"

namespace daqx::nton {

// Function codes of the frames below. Small numbers on purpose: a dispatcher may index a table by them.
namespace function {
inline constexpr std::uint16_t data = 0x0020;  // Sender -> Receiver: DataHeader, then the pattern
inline constexpr std::uint16_t ack = 0x0021;   // Receiver -> Sender: Ack
inline constexpr std::uint16_t ping = 0x0022;  // PingPong -> PingPong: PingHeader, then padding; echoed as pong
inline constexpr std::uint16_t pong = 0x0023;  // the echo of a ping, the same bytes (sent with frame_flags::reply)
}  // namespace function

inline constexpr std::uint8_t kProtocolVersion = 1;

// ---- Data: the first 32 bytes of every data frame's payload -------------------------------------------
//  0 u64 sequence       per (sender, receiver) and run, from 1, no gaps
//  8 u32 sender         TID of the sender (also the frame's initiator)
// 12 u32 run            the sender's enable count: a new run restarts the sequence at 1
// 16 u32 payload_length payload bytes including this header (the frame's total_length - 32)
// 20 u32 ack_every      acknowledge every this many frames (the receiver follows the sender)
// 24 u8  flags          data_flags below
// 25 u8  version        kProtocolVersion
// 26 u16 reserved       zero
// 28 u32 reserved       zero
// 32 ...                pattern bytes (when data_flags::pattern), derived from (sender, sequence)
inline constexpr std::size_t kDataHeaderSize = 32;

namespace data_flags {
inline constexpr std::uint8_t pattern = 0x01;      // the bytes after the header carry the pattern: verify them
inline constexpr std::uint8_t ack_request = 0x02;  // acknowledge now (last frame, full window, end of run)
inline constexpr std::uint8_t end_of_run = 0x04;   // header only, sent on stop so the tail gets acknowledged
}  // namespace data_flags

struct DataHeader {
  std::uint64_t sequence = 0;
  Tid sender = kNoTid;
  std::uint32_t run = 0;
  std::uint32_t payload_length = 0;
  std::uint32_t ack_every = 0;
  std::uint8_t flags = 0;
  std::uint8_t version = kProtocolVersion;
};

inline void encode(const DataHeader& h, std::byte* out) noexcept {
  using detail::store_le;
  store_le<std::uint64_t>(out + 0, h.sequence);
  store_le<std::uint32_t>(out + 8, h.sender);
  store_le<std::uint32_t>(out + 12, h.run);
  store_le<std::uint32_t>(out + 16, h.payload_length);
  store_le<std::uint32_t>(out + 20, h.ack_every);
  out[24] = std::byte{h.flags};
  out[25] = std::byte{h.version};
  store_le<std::uint16_t>(out + 26, 0);
  store_le<std::uint32_t>(out + 28, 0);
}

inline DataHeader decode_data_header(const std::byte* in) noexcept {
  using detail::load_le;
  DataHeader h;
  h.sequence = load_le<std::uint64_t>(in + 0);
  h.sender = load_le<std::uint32_t>(in + 8);
  h.run = load_le<std::uint32_t>(in + 12);
  h.payload_length = load_le<std::uint32_t>(in + 16);
  h.ack_every = load_le<std::uint32_t>(in + 20);
  h.flags = static_cast<std::uint8_t>(in[24]);
  h.version = static_cast<std::uint8_t>(in[25]);
  return h;
}

// ---- Ack: the whole payload of an acknowledgement -----------------------------------------------------
//  0 u64 highest        highest sequence received from this sender in this run (cumulative)
//  8 u32 run            the run of the frames acknowledged; acks of another run are ignored
// 12 u32 reserved       zero
inline constexpr std::size_t kAckSize = 16;

struct Ack {
  std::uint64_t highest = 0;
  std::uint32_t run = 0;
};

inline void encode(const Ack& a, std::byte* out) noexcept {
  using detail::store_le;
  store_le<std::uint64_t>(out + 0, a.highest);
  store_le<std::uint32_t>(out + 8, a.run);
  store_le<std::uint32_t>(out + 12, 0);
}

inline Ack decode_ack(const std::byte* in) noexcept {
  using detail::load_le;
  return Ack{load_le<std::uint64_t>(in + 0), load_le<std::uint32_t>(in + 8)};
}

// ---- Ping: the first 16 bytes of a ping (and of its pong, which echoes every byte) --------------------
//  0 u64 round          round-trip number, from 1 (also the frame's transaction word)
//  8 u32 payload_length payload bytes including this header
// 12 u32 reserved       zero
// 16 ...                padding up to frameSize, not initialised
inline constexpr std::size_t kPingHeaderSize = 16;

struct PingHeader {
  std::uint64_t round = 0;
  std::uint32_t payload_length = 0;
};

inline void encode(const PingHeader& p, std::byte* out) noexcept {
  using detail::store_le;
  store_le<std::uint64_t>(out + 0, p.round);
  store_le<std::uint32_t>(out + 8, p.payload_length);
  store_le<std::uint32_t>(out + 12, 0);
}

inline PingHeader decode_ping_header(const std::byte* in) noexcept {
  using detail::load_le;
  return PingHeader{load_le<std::uint64_t>(in + 0), load_le<std::uint32_t>(in + 8)};
}

}  // namespace daqx::nton
