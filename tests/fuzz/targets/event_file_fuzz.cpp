// Fuzz target: the event-file reader (apps/evb event_file_reader: parse_event_file, what daqx-evb-dump and the tests
// read files with) on any bytes a damaged or hostile file can hold. Properties: it reads only the file's bytes,
// every record and fragment it reports lies inside the file, and a file it calls whole is consistent with its
// trailer.
#include <cstdlib>
#include <cstring>
#include <memory>

#include "files/event_file_reader.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  // A buffer of exactly the file's size: ASan sees a read past the end.
  std::shared_ptr<std::byte[]> bytes(new std::byte[size]);
  if (size > 0) std::memcpy(bytes.get(), data, size);
  daqx::evb::EventFile file;
  file.path = "fuzz.daqx";
  file.mapping = bytes;
  file.data = std::span<const std::byte>(bytes.get(), size);
  daqx::evb::parse_event_file(file);

  const std::byte* begin = file.data.data();
  const std::byte* end = begin + size;
  for (const daqx::evb::EventFileRecord& record : file.records) {
    if (record.offset > size || record.bytes > size - record.offset) std::abort();
    for (const daqx::evb::EventFileFragment& fragment : record.fragments) {
      if (fragment.bytes.data() < begin + record.offset || fragment.bytes.data() + fragment.bytes.size() > end)
        std::abort();
    }
  }
  if (file.ok()) {
    if (file.trailer.events != file.records.size() || file.trailer.file_bytes != size) std::abort();
  } else if (file.problem.empty() && file.has_trailer) {
    std::abort();  // not whole, yet no reason given
  }
  return 0;
}
