// The credit message of the message-based transports.
#include "daqx/pt/credit_flow.hpp"

namespace daqx::pt {

void encode_credit(const CreditMessage& message, std::byte* out) noexcept {
  detail::store_le<std::uint32_t>(out, kCreditMagic);
  detail::store_le<std::uint32_t>(out + 4, message.buffer_size);
  detail::store_le<std::uint64_t>(out + 8, message.posted_total);
}

bool decode_credit(const std::byte* in, std::size_t length, CreditMessage& out) noexcept {
  if (length != kCreditMessageSize || detail::load_le<std::uint32_t>(in) != kCreditMagic) return false;
  out.buffer_size = detail::load_le<std::uint32_t>(in + 4);
  out.posted_total = detail::load_le<std::uint64_t>(in + 8);
  return out.buffer_size != 0;
}

}  // namespace daqx::pt
