// Fuzz target: the stream messages a publisher and a subscriber take from each other (streams/protocol), the
// header of an external subscriber's records (streams/external_record) and the policy's text form (streams/policy),
// on any bytes. Input: a selector byte, then the bytes. Properties: an answer is
// a message or a reason, never both; every reason is one printable line; a message accepted encodes back to the
// same bytes (the formats have one spelling); a policy accepted is in range and its text reads back as itself.
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "daqx/services/text.hpp"
#include "daqx/streams/external_record.hpp"
#include "daqx/streams/policy.hpp"
#include "daqx/streams/protocol.hpp"

namespace {

void require_line(const std::string& reason) {
  if (reason.empty() || daqx::strings::valid_utf8(reason) != reason) std::abort();
  for (char c : reason)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) std::abort();
}

template <typename Message>
void require_answer(const daqx::streams::Parsed<Message>& parsed) {
  if (parsed.message.has_value() == !parsed.error.empty()) std::abort();
  if (!parsed.message) require_line(parsed.error);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace daqx::streams;
  if (size == 0) return 0;
  const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data + 1), size - 1);
  switch (data[0] % 5) {
    case 0: {
      const Parsed<ControlMessage> parsed = parse_control(bytes);
      require_answer(parsed);
      if (parsed.message) {
        if (!check_policy(parsed.message->policy).empty() && parsed.message->kind == ControlKind::subscribe) std::abort();
        std::vector<std::byte> again(control_bytes(*parsed.message));
        encode(*parsed.message, again.data());
        // Acknowledgements and unsubscribes ignore the policy fields: only their own fields must come back.
        const Parsed<ControlMessage> reread = parse_control(again);
        if (!reread.message || reread.message->subscription != parsed.message->subscription ||
            reread.message->sequence != parsed.message->sequence || reread.message->stream != parsed.message->stream)
          std::abort();
      }
      break;
    }
    case 1: {
      const Parsed<ReplyMessage> parsed = parse_reply(bytes);
      require_answer(parsed);
      if (parsed.message && parsed.message->reason.size() > 4 * kMaxReason) std::abort();
      break;
    }
    case 2: {
      const Parsed<DataHeader> parsed = parse_data(bytes);
      require_answer(parsed);
      if (parsed.message) {
        std::byte again[kDataHeaderBytes];
        encode(*parsed.message, again);
        if (std::memcmp(again, bytes.data(), kDataHeaderBytes) != 0) std::abort();
      }
      break;
    }
    case 3: {  // an external subscriber's record header (what daqx-evb-dump --follow reads)
      const ParsedRecordHeader parsed = parse_record_header(bytes);
      if (parsed.header.has_value() == !parsed.error.empty()) std::abort();
      if (!parsed.header) {
        require_line(parsed.error);
        break;
      }
      if (parsed.header->length > kMaxRecordBytes || (parsed.header->sequence == 0 && parsed.header->length != 0))
        std::abort();
      std::byte again[kRecordHeaderBytes];
      encode(*parsed.header, again);
      if (std::memcmp(again, bytes.data(), kRecordHeaderBytes) != 0) std::abort();
      break;
    }
    default: {
      const std::string_view text(reinterpret_cast<const char*>(bytes.data()), bytes.size());
      const ParsedPolicy parsed = parse_policy(text);
      if (parsed.policy.has_value() == !parsed.error.empty()) std::abort();
      if (!parsed.policy) {
        require_line(parsed.error);
        break;
      }
      if (!check_policy(*parsed.policy).empty()) std::abort();
      const ParsedPolicy reread = parse_policy(to_string(*parsed.policy));
      if (!reread.policy || !(*reread.policy == *parsed.policy)) std::abort();
      break;
    }
  }
  return 0;
}
