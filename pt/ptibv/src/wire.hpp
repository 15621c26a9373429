// ptibv's wire protocol on one RC connection, apart from verbs so that it can be tested alone.
//
// A connection carries frames one way, as in pttcp and ptofi: the side that called rdma_connect (the
// sender) posts data messages, the side that accepted (the receiver) posts only credit messages back.
//
// - Connection request (rdma_connect private data, sender -> receiver): ConnectRequest, 16 bytes. The
//   receiver rejects a request whose private data is not one (counted as a refused request).
// - Connection reply (rdma_accept private data, receiver -> sender): ConnectReply, 24 bytes: the size of the
//   receiver's buffers and how many it has posted for this connection, i.e. the sender's first credits.
//   (Private data may arrive zero-padded to the CM's field size: decoders accept longer data.)
// - Data message: IBV_WR_SEND_WITH_IMM from the frame's pool blocks (or inline). The first message of a
//   frame starts with its daqx frame header; a frame larger than the receiver's buffers is cut into several
//   messages (pt/credit_flow). The immediate value is, in network byte order, the number of credit buffers
//   the sender has posted on this connection since it opened, modulo 2^32.
// - Credit message: IBV_WR_SEND without immediate of pt::CreditMessage (16 bytes), receiver -> sender.
//
// Neither direction can meet a receiver without a posted buffer, so no receiver-not-ready retry happens:
// the sender posts a data message only with a credit (pt::SendCredits), and the receiver sends a credit
// message only when the sender has a buffer for it (CreditMessageAllowance below). The sender re-posts a
// credit buffer before it uses the credits that message carried, so every data message sent with them
// tells the receiver of that buffer: a receiver short of allowance always gets news before the sender
// runs dry (see the proof in the comment of CreditMessageAllowance).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace daqx::ptibv {

inline constexpr std::uint32_t kRequestMagic = 0x52425144;  // "DQBR"
inline constexpr std::uint32_t kReplyMagic = 0x41425144;    // "DQBA"
inline constexpr std::uint16_t kWireVersion = 1;
inline constexpr std::size_t kConnectRequestSize = 16;
inline constexpr std::size_t kConnectReplySize = 24;

// Little-endian: magic (4), version (2), reserved (2), credit_buffers (4), reserved (4).
struct ConnectRequest {
  std::uint32_t credit_buffers = 0;  // buffers the sender posted for credit messages before connecting
};

// Little-endian: magic (4), version (2), reserved (2), buffer_size (4), reserved (4), posted_total (8).
struct ConnectReply {
  std::uint32_t buffer_size = 0;   // bytes in each of the receiver's buffers: the largest message
  std::uint64_t posted_total = 0;  // buffers posted for this connection: the sender's first credits
};

void encode_request(const ConnectRequest& request, std::byte* out) noexcept;   // kConnectRequestSize bytes
void encode_reply(const ConnectReply& reply, std::byte* out) noexcept;         // kConnectReplySize bytes
// Empty when the private data holds a request (or reply); else why not, for the log.
std::string decode_request(const void* data, std::size_t length, ConnectRequest& out);
std::string decode_reply(const void* data, std::size_t length, ConnectReply& out);

// The receiver's side of the credit messages: how many more it may send without the sender lacking a
// buffer for them. The sender said how many buffers it posted first (ConnectRequest::credit_buffers), and
// each data message says how many it has posted in total since (its immediate value, modulo 2^32).
//
// Why this cannot deadlock: the receiver is stuck only if it has sent as many credit messages as it knows
// buffers for while the sender waits for credits. Every credit message it sent has arrived (RC is
// reliable) or will arrive and give the sender credits. The sender re-posted the buffer of each before
// using its credits, and each message grants at least one new credit; so if the sender has frames, the
// first data message sent with the last message's credits carries a total that covers every credit
// message sent so far, and the allowance is back to the number of buffers the sender keeps posted.
class CreditMessageAllowance {
 public:
  void start(std::uint32_t sender_buffers) noexcept {
    known_posted_ = sender_buffers;
    sent_ = 0;
  }
  // From a data message's immediate value. Data messages arrive in order, so totals only grow; the
  // difference is taken modulo 2^32 so that wrapping around is harmless.
  void update(std::uint32_t posted_total) noexcept { known_posted_ = posted_total; }
  std::uint32_t available() const noexcept {
    std::uint32_t left = known_posted_ - sent_;
    return left > (1u << 31) ? 0 : left;  // a total older than what we sent: nothing, never a huge number
  }
  void sent() noexcept { ++sent_; }

 private:
  std::uint32_t known_posted_ = 0;
  std::uint32_t sent_ = 0;
};

}  // namespace daqx::ptibv
