// The event file reader: maps a file and checks its structure record by record.
#include "files/event_file_reader.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string_view>
#include <utility>

#include "daqx/apps/text.hpp"

namespace daqx::evb {

namespace {

using apps::concatenate;

std::uint32_t get32(const std::byte* at) noexcept {
  std::uint32_t value = 0;
  for (int i = 0; i < 4; ++i) value |= std::uint32_t{std::to_integer<std::uint8_t>(at[i])} << (8 * i);
  return value;
}
std::uint64_t get64(const std::byte* at) noexcept {
  std::uint64_t value = 0;
  for (int i = 0; i < 8; ++i) value |= std::uint64_t{std::to_integer<std::uint8_t>(at[i])} << (8 * i);
  return value;
}

std::string at_offset(std::uint64_t offset) { return concatenate({"offset ", std::to_string(offset), ": "}); }

std::string hex32(std::uint32_t value) {
  char text[16];
  std::snprintf(text, sizeof text, "0x%08x", value);
  return text;
}

}  // namespace

// One event record at the start of `bytes`, found at `offset` (of the file, or 0): every problem names it.
std::string parse_event_record(std::span<const std::byte> bytes, std::uint64_t offset, EventFileRecord& record) {
  const std::uint64_t left = bytes.size();
  const std::byte* at = bytes.data();
  if (left >= 4 && get32(at) != kEventRecordMagic)
    return concatenate({at_offset(offset), "no record here (magic ", hex32(get32(at)), ")"});
  if (left < kEventRecordHeaderBytes)
    return concatenate({at_offset(offset), "record header cut short (", std::to_string(left), " bytes left)"});
  record = {};
  record.offset = offset;
  record.flags = get32(at + 4);
  record.event = get64(at + 8);
  record.run = get32(at + 16);
  const std::uint32_t count = get32(at + 20);
  record.bytes = get64(at + 24);
  const std::uint64_t table_end = kEventRecordHeaderBytes + std::uint64_t{kFragmentEntryBytes} * count;
  const std::string where = concatenate({at_offset(offset), "event ", std::to_string(record.event), ": "});
  if (record.bytes > left) {
    return concatenate({where, "record of ", std::to_string(record.bytes), " bytes runs past the end (",
                        std::to_string(left), " bytes left)"});
  }
  if (table_end > record.bytes) {
    return concatenate({where, std::to_string(count), " fragments do not fit a record of ",
                        std::to_string(record.bytes), " bytes"});
  }
  record.fragments.reserve(count);
  std::uint64_t position = table_end;
  for (std::uint32_t i = 0; i < count; ++i) {
    const std::byte* entry = at + kEventRecordHeaderBytes + std::uint64_t{kFragmentEntryBytes} * i;
    const std::uint32_t contributor = get32(entry);
    const std::uint64_t fragment_size = get64(entry + 8);
    if (get32(entry + 4) != 0) return concatenate({where, "fragment ", std::to_string(i), ": reserved field not zero"});
    if (fragment_size > record.bytes - position ||
        padding_of(fragment_size) > record.bytes - position - fragment_size) {
      return concatenate({where, "fragment ", std::to_string(i), " of ", std::to_string(fragment_size),
                          " bytes runs past the record's ", std::to_string(record.bytes), " bytes"});
    }
    record.fragments.push_back({contributor, bytes.subspan(position, fragment_size)});
    position += fragment_size;
    for (std::uint64_t p = 0; p < padding_of(fragment_size); ++p, ++position)
      if (at[position] != std::byte{0}) return concatenate({where, "fragment ", std::to_string(i), ": padding not zero"});
  }
  if (position != record.bytes) {
    return concatenate({where, "record claims ", std::to_string(record.bytes), " bytes, its fragments take ",
                        std::to_string(position)});
  }
  return {};
}

// Parses the records from the header on; stops at the first problem, which it writes into file.problem.
void parse_event_file(EventFile& file) {
  const auto data = file.data;
  const std::uint64_t size = data.size();
  if (size < kFileHeaderBytes) {
    file.problem = concatenate({"the file has ", std::to_string(size), " bytes, fewer than a file header (",
                                std::to_string(kFileHeaderBytes), ")"});
    return;
  }
  if (std::memcmp(data.data(), kEventFileMagic, sizeof kEventFileMagic) != 0) {
    file.problem = "not an event file (no DAQXEVB1 magic)";
    return;
  }
  file.version = get32(&data[8]);
  const std::uint32_t header_bytes = get32(&data[12]);
  file.run = get32(&data[16]);
  file.builder = get32(&data[20]);
  file.created_ns = get64(&data[24]);
  file.sequence = get32(&data[32]);
  if (file.version < kOldestEventFileVersion || file.version > kEventFileVersion) {
    file.problem = concatenate({"format version ", std::to_string(file.version), " (this reader knows ",
                                std::to_string(kOldestEventFileVersion), " to ", std::to_string(kEventFileVersion),
                                ")"});
    return;
  }
  if (file.version >= 2) file.run_number = get64(&data[40]);  // reserved, zero, in version 1
  if (header_bytes < kFileHeaderBytes || header_bytes > size) {
    file.problem = concatenate({"file header claims ", std::to_string(header_bytes), " bytes"});
    return;
  }

  std::uint64_t offset = header_bytes;
  for (;;) {
    const std::uint64_t left = size - offset;
    if (left == 0) {
      file.problem = "no trailer: the file was not closed cleanly (or is still being written)";
      return;
    }
    if (left < 4) {
      file.problem = concatenate({at_offset(offset), std::to_string(left), " stray bytes at the end"});
      return;
    }
    const std::byte* at = &data[offset];
    const std::uint32_t magic = get32(at);
    if (magic == kTrailerRecordMagic) {
      if (left < kTrailerRecordBytes) {
        file.problem = concatenate({at_offset(offset), "trailer cut short (", std::to_string(left), " bytes)"});
        return;
      }
      file.has_trailer = true;
      auto& trailer = file.trailer;
      trailer.events = get64(at + 8);
      trailer.file_bytes = get64(at + 16);
      trailer.first_event = get64(at + 24);
      trailer.last_event = get64(at + 32);
      trailer.closed_ns = get64(at + 40);
      const std::uint64_t end = offset + kTrailerRecordBytes;
      if (get32(at + 4) != kTrailerRecordBytes) {
        file.problem = concatenate({at_offset(offset), "trailer claims ", std::to_string(get32(at + 4)),
                                    " bytes (", std::to_string(kTrailerRecordBytes), " expected)"});
      } else if (trailer.events != file.records.size()) {
        file.problem = concatenate({"trailer counts ", std::to_string(trailer.events), " events, the file holds ",
                                    std::to_string(file.records.size())});
      } else if (trailer.file_bytes != end) {
        file.problem = concatenate({"trailer counts ", std::to_string(trailer.file_bytes),
                                    " bytes, it ends the file at ", std::to_string(end)});
      } else if (end != size) {
        file.problem = concatenate({std::to_string(size - end), " bytes after the trailer"});
      } else if (!file.records.empty() && (trailer.first_event != file.records.front().event ||
                                           trailer.last_event != file.records.back().event)) {
        file.problem = concatenate({"trailer names events ", std::to_string(trailer.first_event), "..",
                                    std::to_string(trailer.last_event), ", the file holds ",
                                    std::to_string(file.records.front().event), "..",
                                    std::to_string(file.records.back().event)});
      }
      return;
    }
    EventFileRecord record;
    if (std::string problem = parse_event_record(data.subspan(offset), offset, record); !problem.empty()) {
      file.problem = std::move(problem);
      return;
    }
    if (record.run != file.run) {
      file.problem = concatenate({at_offset(offset), "event ", std::to_string(record.event), ": run ",
                                  std::to_string(record.run), " in a file of run ", std::to_string(file.run)});
      return;
    }
    offset += record.bytes;
    file.records.push_back(std::move(record));
  }
}

EventFile read_event_file(const std::string& path) {
  EventFile file;
  file.path = path;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw_file_error("cannot open", path, errno);
  struct stat info {};
  if (::fstat(fd, &info) != 0) {
    const int error = errno;
    ::close(fd);
    throw_file_error("cannot read", path, error);
  }
  const auto size = static_cast<std::size_t>(info.st_size);
  if (size > 0) {
    void* address = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (address == MAP_FAILED) {
      const int error = errno;
      ::close(fd);
      throw_file_error("cannot map", path, error);
    }
    ::posix_madvise(address, size, POSIX_MADV_SEQUENTIAL);
    file.mapping = std::shared_ptr<const void>(address, [size](const void* mapped) {
      ::munmap(const_cast<void*>(mapped), size);
    });
    file.data = std::span<const std::byte>(static_cast<const std::byte*>(address), size);
  }
  ::close(fd);
  parse_event_file(file);
  return file;
}

}  // namespace daqx::evb
