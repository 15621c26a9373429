// Fuzz target: the event builder's protocol messages as a peer can send them (apps/evb protocol.hpp): a BU's
// request, the EvM's allocation, an RU's status, a control message, and a fragment block walked piece by piece
// as the BU walks it. Properties: decoders read only the payload given; what they accept is a whole message
// (the decoded message encodes back to exactly as many bytes, and that encoding decodes and encodes the same);
// a block walk never takes bytes past the payload.
#include <cstdlib>
#include <cstring>
#include <optional>
#include <vector>

#include "../fuzz_support.hpp"
#include "daqx/evb/protocol.hpp"

namespace {

using namespace daqx::evb;

// decode -> encode -> decode -> encode: the two encodings agree and have the payload's size.
template <typename Message, typename Decode>
void round_trip(const std::vector<std::byte>& payload, Decode decode) {
  const std::optional<Message> decoded = decode(payload.data(), payload.size());
  if (!decoded) return;
  std::vector<std::byte> first(payload.size() + 64);
  const std::optional<std::size_t> used = encode(*decoded, first.data(), first.size());
  if (!used || *used != payload.size()) std::abort();
  const std::optional<Message> again = decode(first.data(), *used);
  if (!again) std::abort();
  std::vector<std::byte> second(first.size());
  const std::optional<std::size_t> used_again = encode(*again, second.data(), second.size());
  if (!used_again || *used_again != *used || std::memcmp(first.data(), second.data(), *used) != 0) std::abort();
}

void walk_block(const std::vector<std::byte>& payload) {
  ByteReader in(payload.data(), payload.size());
  const BlockHeader header = decode_block_header(in);
  for (std::uint32_t p = 0; p < header.piece_count && in.ok(); ++p) {
    const PieceHeader piece = decode_piece_header(in);
    const std::byte* bytes = in.take(piece.size);
    in.align_to(kPieceAlignment);
    if (!in.ok()) break;
    if (bytes < payload.data() || bytes + piece.size > payload.data() + payload.size()) std::abort();
  }
  if (in.used() > payload.size()) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  FuzzedDataProvider input(data, size);
  const auto which = input.ConsumeIntegralInRange<int>(0, 4);
  const std::vector<std::byte> payload = daqx::fuzz::remaining_bytes(input);
  switch (which) {
    case 0: round_trip<Request>(payload, decode_request); break;
    case 1: round_trip<Allocate>(payload, decode_allocate); break;
    case 2: round_trip<RuStatus>(payload, decode_ru_status); break;
    case 3: round_trip<Control>(payload, decode_control); break;
    default: walk_block(payload); break;
  }
  return 0;
}
