#include "daqx/streams/protocol.hpp"

#include <bit>
#include <algorithm>
#include <cstring>

#include "daqx/api/frame.hpp"
#include "daqx/services/text.hpp"

namespace daqx::streams {
namespace {

using detail::load_le;
using detail::store_le;

template <typename Message>
Parsed<Message> refuse(std::string why) {
  return {std::nullopt, std::move(why)};
}

std::string_view text_at(std::span<const std::byte> bytes) {
  return {reinterpret_cast<const char*>(bytes.data()), bytes.size()};
}

}  // namespace

std::size_t control_bytes(const ControlMessage& message) noexcept {
  return kControlBytes + (message.kind == ControlKind::subscribe ? message.stream.size() : 0);
}

void encode(const ControlMessage& message, std::byte* out) noexcept {
  const bool subscribe = message.kind == ControlKind::subscribe;
  const std::size_t name = subscribe ? message.stream.size() : 0;
  store_le<std::uint8_t>(out + 0, static_cast<std::uint8_t>(message.kind));
  store_le<std::uint8_t>(out + 1, subscribe ? static_cast<std::uint8_t>(message.policy.kind) : 0);
  store_le<std::uint16_t>(out + 2, static_cast<std::uint16_t>(name));
  store_le<std::uint32_t>(out + 4, subscribe ? message.policy.every : 0);
  store_le<std::uint32_t>(out + 8, subscribe ? message.policy.depth : 0);
  store_le<std::uint32_t>(out + 12, 0);
  store_le<std::uint64_t>(out + 16, std::bit_cast<std::uint64_t>(subscribe ? message.policy.max_rate : 0.0));
  store_le<std::uint64_t>(out + 24, message.subscription);
  store_le<std::uint64_t>(out + 32, message.sequence);
  if (name != 0) std::memcpy(out + kControlBytes, message.stream.data(), name);
}

Parsed<ControlMessage> parse_control(std::span<const std::byte> payload) {
  if (payload.size() < kControlBytes)
    return refuse<ControlMessage>("a stream control message of " + std::to_string(payload.size()) +
                                  " bytes: shorter than its " + std::to_string(kControlBytes) + "-byte head");
  const std::byte* in = payload.data();
  const auto kind = load_le<std::uint8_t>(in + 0);
  const std::size_t name = load_le<std::uint16_t>(in + 2);
  if (load_le<std::uint32_t>(in + 12) != 0) return refuse<ControlMessage>("a stream control message's reserved word is not 0");
  ControlMessage message;
  message.subscription = load_le<std::uint64_t>(in + 24);
  message.sequence = load_le<std::uint64_t>(in + 32);
  if (kind == static_cast<std::uint8_t>(ControlKind::acknowledge) ||
      kind == static_cast<std::uint8_t>(ControlKind::unsubscribe)) {
    message.kind = static_cast<ControlKind>(kind);
    if (name != 0 || payload.size() != kControlBytes)
      return refuse<ControlMessage>("a stream acknowledgement or unsubscribe carries no name");
    return {std::move(message), {}};
  }
  if (kind != static_cast<std::uint8_t>(ControlKind::subscribe))
    return refuse<ControlMessage>("unknown stream control kind " + std::to_string(kind));
  if (payload.size() != kControlBytes + name)
    return refuse<ControlMessage>("a subscribe of " + std::to_string(payload.size()) + " bytes for a name of " +
                                  std::to_string(name) + ": they do not add up");
  message.policy.kind = static_cast<PolicyKind>(load_le<std::uint8_t>(in + 1));
  message.policy.every = load_le<std::uint32_t>(in + 4);
  message.policy.depth = load_le<std::uint32_t>(in + 8);
  message.policy.max_rate = std::bit_cast<double>(load_le<std::uint64_t>(in + 16));
  if (std::string why = check_policy(message.policy); !why.empty()) return refuse<ControlMessage>("policy: " + why);
  message.stream = std::string(text_at(payload.subspan(kControlBytes)));
  if (std::string why = check_stream_name(message.stream); !why.empty()) return refuse<ControlMessage>(why);
  return {std::move(message), {}};
}

std::size_t reply_bytes(const ReplyMessage& message) noexcept {
  return kReplyBytes + std::min(message.reason.size(), kMaxReason);
}

void encode(const ReplyMessage& message, std::byte* out) noexcept {
  const std::size_t reason = std::min(message.reason.size(), kMaxReason);
  store_le<std::uint8_t>(out + 0, static_cast<std::uint8_t>(message.kind));
  store_le<std::uint8_t>(out + 1, 0);
  store_le<std::uint16_t>(out + 2, static_cast<std::uint16_t>(reason));
  store_le<std::uint32_t>(out + 4, 0);
  store_le<std::uint64_t>(out + 8, message.subscription);
  if (reason != 0) std::memcpy(out + kReplyBytes, message.reason.data(), reason);
}

Parsed<ReplyMessage> parse_reply(std::span<const std::byte> payload) {
  if (payload.size() < kReplyBytes)
    return refuse<ReplyMessage>("a stream reply of " + std::to_string(payload.size()) + " bytes: shorter than its " +
                                std::to_string(kReplyBytes) + "-byte head");
  const std::byte* in = payload.data();
  const auto kind = load_le<std::uint8_t>(in + 0);
  const std::size_t reason = load_le<std::uint16_t>(in + 2);
  if (kind < static_cast<std::uint8_t>(ReplyKind::accepted) || kind > static_cast<std::uint8_t>(ReplyKind::ended))
    return refuse<ReplyMessage>("unknown stream reply kind " + std::to_string(kind));
  if (load_le<std::uint8_t>(in + 1) != 0 || load_le<std::uint32_t>(in + 4) != 0)
    return refuse<ReplyMessage>("a stream reply's reserved bytes are not 0");
  if (reason > kMaxReason || payload.size() != kReplyBytes + reason)
    return refuse<ReplyMessage>("a stream reply of " + std::to_string(payload.size()) + " bytes for a reason of " +
                                std::to_string(reason) + ": they do not add up (the reason has at most " +
                                std::to_string(kMaxReason) + ")");
  ReplyMessage message;
  message.kind = static_cast<ReplyKind>(kind);
  message.subscription = load_le<std::uint64_t>(in + 8);
  message.reason = strings::printable(text_at(payload.subspan(kReplyBytes)));
  return {std::move(message), {}};
}

void encode(const DataHeader& header, std::byte* out) noexcept {
  store_le<std::uint64_t>(out + 0, header.subscription);
  store_le<std::uint64_t>(out + 8, header.sequence);
  store_le<std::uint64_t>(out + 16, header.key);
  store_le<std::uint64_t>(out + 24, header.dropped);
}

Parsed<DataHeader> parse_data(std::span<const std::byte> payload) {
  if (payload.size() < kDataHeaderBytes)
    return refuse<DataHeader>("a stream record of " + std::to_string(payload.size()) + " bytes: shorter than its " +
                              std::to_string(kDataHeaderBytes) + "-byte header");
  DataHeader header;
  header.subscription = load_le<std::uint64_t>(payload.data() + 0);
  header.sequence = load_le<std::uint64_t>(payload.data() + 8);
  header.key = load_le<std::uint64_t>(payload.data() + 16);
  header.dropped = load_le<std::uint64_t>(payload.data() + 24);
  return {header, {}};
}

}  // namespace daqx::streams
