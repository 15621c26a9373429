// ptibv's connection private data.
#include "wire.hpp"

#include <cstring>

#include "daqx/api/frame.hpp"

namespace daqx::ptibv {
namespace {

std::string hex(std::uint32_t value) {
  char text[16];
  std::snprintf(text, sizeof text, "0x%08x", value);
  return text;
}

std::string check_prefix(const std::byte* in, std::size_t length, std::size_t expected, std::uint32_t magic,
                         const char* what) {
  if (in == nullptr || length < expected)
    return std::string("private data of ") + std::to_string(length) + " bytes is too short for a " + what + " (" +
           std::to_string(expected) + " bytes)";
  std::uint32_t got = detail::load_le<std::uint32_t>(in);
  if (got != magic) return std::string("private data is not a daqx ") + what + " (magic " + hex(got) + ")";
  std::uint16_t version = detail::load_le<std::uint16_t>(in + 4);
  if (version != kWireVersion)
    return std::string("a ") + what + " of wire version " + std::to_string(version) + "; this is version " +
           std::to_string(kWireVersion);
  return {};
}

}  // namespace

void encode_request(const ConnectRequest& request, std::byte* out) noexcept {
  std::memset(out, 0, kConnectRequestSize);
  detail::store_le<std::uint32_t>(out, kRequestMagic);
  detail::store_le<std::uint16_t>(out + 4, kWireVersion);
  detail::store_le<std::uint32_t>(out + 8, request.credit_buffers);
}

void encode_reply(const ConnectReply& reply, std::byte* out) noexcept {
  std::memset(out, 0, kConnectReplySize);
  detail::store_le<std::uint32_t>(out, kReplyMagic);
  detail::store_le<std::uint16_t>(out + 4, kWireVersion);
  detail::store_le<std::uint32_t>(out + 8, reply.buffer_size);
  detail::store_le<std::uint64_t>(out + 16, reply.posted_total);
}

std::string decode_request(const void* data, std::size_t length, ConnectRequest& out) {
  const auto* in = static_cast<const std::byte*>(data);
  std::string error = check_prefix(in, length, kConnectRequestSize, kRequestMagic, "connection request");
  if (!error.empty()) return error;
  out.credit_buffers = detail::load_le<std::uint32_t>(in + 8);
  if (out.credit_buffers == 0) return "a connection request with no buffers for credit messages";
  return {};
}

std::string decode_reply(const void* data, std::size_t length, ConnectReply& out) {
  const auto* in = static_cast<const std::byte*>(data);
  std::string error = check_prefix(in, length, kConnectReplySize, kReplyMagic, "connection reply");
  if (!error.empty()) return error;
  out.buffer_size = detail::load_le<std::uint32_t>(in + 8);
  out.posted_total = detail::load_le<std::uint64_t>(in + 16);
  if (out.buffer_size == 0) return "a connection reply with a buffer size of 0";
  return {};
}

}  // namespace daqx::ptibv
