// Fuzz target: the connection-protocol messages of the message transports, as a peer can send them: ptibv's
// rdma_cm private data (connection request and reply, pt/ptibv/src/wire.*) and the credit message of the shared
// layer that ptofi and ptibv receivers send back (pt/base credit_flow). Properties: a decoder reads only the
// bytes given, refuses with words, and what it accepts encodes back to bytes that decode to the same values.
#include <array>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "../fuzz_support.hpp"
#include "daqx/pt/credit_flow.hpp"
#include "wire.hpp"

namespace {

void request(const std::vector<std::byte>& bytes) {
  daqx::ptibv::ConnectRequest decoded;
  const std::string refusal = daqx::ptibv::decode_request(bytes.data(), bytes.size(), decoded);
  if (!refusal.empty()) return;
  std::array<std::byte, daqx::ptibv::kConnectRequestSize> again{};
  daqx::ptibv::encode_request(decoded, again.data());
  daqx::ptibv::ConnectRequest twice;
  if (!daqx::ptibv::decode_request(again.data(), again.size(), twice).empty()) std::abort();
  if (twice.credit_buffers != decoded.credit_buffers) std::abort();
}

void reply(const std::vector<std::byte>& bytes) {
  daqx::ptibv::ConnectReply decoded;
  if (!daqx::ptibv::decode_reply(bytes.data(), bytes.size(), decoded).empty()) return;
  std::array<std::byte, daqx::ptibv::kConnectReplySize> again{};
  daqx::ptibv::encode_reply(decoded, again.data());
  daqx::ptibv::ConnectReply twice;
  if (!daqx::ptibv::decode_reply(again.data(), again.size(), twice).empty()) std::abort();
  if (twice.buffer_size != decoded.buffer_size || twice.posted_total != decoded.posted_total) std::abort();
}

void credit(const std::vector<std::byte>& bytes) {
  daqx::pt::CreditMessage decoded;
  if (!daqx::pt::decode_credit(bytes.data(), bytes.size(), decoded)) return;
  std::array<std::byte, daqx::pt::kCreditMessageSize> again{};
  daqx::pt::encode_credit(decoded, again.data());
  daqx::pt::CreditMessage twice;
  if (!daqx::pt::decode_credit(again.data(), again.size(), twice)) std::abort();
  if (twice.buffer_size != decoded.buffer_size || twice.posted_total != decoded.posted_total) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  FuzzedDataProvider input(data, size);
  const auto which = input.ConsumeIntegralInRange<int>(0, 2);
  const std::vector<std::byte> bytes = daqx::fuzz::remaining_bytes(input);
  if (which == 0) request(bytes);
  if (which == 1) reply(bytes);
  if (which == 2) credit(bytes);
  return 0;
}
