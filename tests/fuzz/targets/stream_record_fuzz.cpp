// Fuzz target: the event stream reader (apps/evb event_stream_reader: what daqx-evb-dump --follow reads a stream's
// answer with) on any bytes a damaged or hostile control port can send, cut into pieces of any size. Properties:
// every fragment it reports lies inside its record's bytes, a record's event fills its stream record, and the
// pieces change nothing: the same records and the same problem as when the bytes come at once.
#include <fuzzer/FuzzedDataProvider.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "files/event_stream_reader.hpp"
#include "../fuzz_support.hpp"

namespace {

struct Read {
  std::vector<daqx::streams::RecordHeader> headers;
  std::string problem;
};

Read read_in_pieces(const std::vector<std::byte>& bytes, std::size_t piece) {
  Read read;
  daqx::evb::EventStreamReader reader;
  for (std::size_t at = 0; at < bytes.size(); at += piece) {
    const std::size_t size = bytes.size() - at < piece ? bytes.size() - at : piece;
    // A piece in a buffer of exactly its size: ASan sees a read past it.
    const std::vector<std::byte> part(bytes.begin() + static_cast<std::ptrdiff_t>(at),
                                      bytes.begin() + static_cast<std::ptrdiff_t>(at + size));
    reader.feed(part);
    while (auto event = reader.next()) {
      if (event->keep_alive()) {
        if (!event->bytes.empty() || !event->record.fragments.empty()) std::abort();
      } else {
        if (event->bytes.size() != event->header.length || event->record.bytes != event->bytes.size()) std::abort();
        const std::byte* begin = event->bytes.data();
        const std::byte* end = begin + event->bytes.size();
        for (const auto& fragment : event->record.fragments) {
          if (fragment.bytes.data() < begin || fragment.bytes.data() + fragment.bytes.size() > end) std::abort();
        }
      }
      read.headers.push_back(event->header);
    }
  }
  read.problem = reader.problem();
  return read;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  FuzzedDataProvider input(data, size);
  const std::size_t piece = input.ConsumeIntegralInRange<std::size_t>(1, 4096);
  const std::vector<std::byte> bytes = daqx::fuzz::remaining_bytes(input);
  const Read whole = read_in_pieces(bytes, bytes.empty() ? 1 : bytes.size());
  const Read pieces = read_in_pieces(bytes, piece);
  if (whole.problem != pieces.problem || whole.headers.size() != pieces.headers.size()) std::abort();
  for (std::size_t i = 0; i < whole.headers.size(); ++i) {
    if (whole.headers[i].sequence != pieces.headers[i].sequence || whole.headers[i].length != pieces.headers[i].length)
      std::abort();
  }
  return 0;
}
