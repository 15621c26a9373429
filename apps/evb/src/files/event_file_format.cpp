// Event records' heads, file names and errors, as the writer, the reader and the BU's stream spell them.
#include "files/event_file_format.hpp"

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <stdexcept>

#include "daqx/apps/text.hpp"

namespace daqx::evb {

std::uint64_t event_record_bytes(const EventRecordView& event) {
  std::uint64_t record_bytes = event_record_head_bytes(event.fragments.size());
  for (const auto& fragment : event.fragments) {
    std::size_t sum = 0;
    for (const auto& piece : fragment.pieces) sum += piece.size();
    if (sum != fragment.size) {
      throw std::runtime_error(apps::concatenate({"event ", std::to_string(event.event), ": the pieces of contributor ",
                                                  std::to_string(fragment.contributor), "'s fragment hold ",
                                                  std::to_string(sum), " bytes where its size says ",
                                                  std::to_string(fragment.size)}));
    }
    record_bytes += fragment.size + padding_of(fragment.size);
  }
  if (event.fragments.size() > UINT32_MAX) throw std::runtime_error("event with more than 2^32 fragments");
  return record_bytes;
}

void encode_event_record_head(const EventRecordView& event, std::uint64_t record_bytes, std::byte* head) noexcept {
  put32(&head[0], kEventRecordMagic);
  put32(&head[4], event.flags);
  put64(&head[8], event.event);
  put32(&head[16], event.run);
  put32(&head[20], static_cast<std::uint32_t>(event.fragments.size()));
  put64(&head[24], record_bytes);
  std::size_t entry = kEventRecordHeaderBytes;
  for (const auto& fragment : event.fragments) {
    put32(&head[entry], fragment.contributor);
    put32(&head[entry + 4], 0);
    put64(&head[entry + 8], fragment.size);
    entry += kFragmentEntryBytes;
  }
}

std::string event_file_name(std::uint32_t run, std::uint32_t builder, std::uint32_t sequence) {
  char name[64];
  std::snprintf(name, sizeof name, "run%06u_bu%u_%04u.daqx", run, builder, sequence);
  return name;
}

void throw_file_error(std::string_view what, const std::string& path, int error) {
  throw std::runtime_error(apps::concatenate({what, " ", path, ": ", std::strerror(error)}));
}

}  // namespace daqx::evb
