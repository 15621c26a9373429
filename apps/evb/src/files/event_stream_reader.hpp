// Reading a stream of events as the control port sends it to an external subscriber (daqx-evb-dump --follow, its
// fuzzer): the answer's bytes, in pieces of any size, cut into records (daqx/streams/external_record.hpp), each
// record's event checked as an event file's record is (parse_event_record), and the records' sequence checked.
// Format: docs/monitoring.md, "External subscribers"; the event bytes: docs/evb-files.md.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "daqx/streams/external_record.hpp"
#include "files/event_file_reader.hpp"

namespace daqx::evb {

// One record of the stream with its event (a keep-alive has none: header.sequence 0, no bytes).
struct StreamedEvent {
  streams::RecordHeader header;
  std::vector<std::byte> bytes;  // the event record's bytes
  EventFileRecord record;        // parsed from bytes (fragments point into them); empty for a keep-alive
  bool keep_alive() const noexcept { return header.sequence == 0; }
};

class EventStreamReader {
 public:
  // Appends the next bytes of the answer's body (after the chunked encoding is taken off).
  void feed(std::span<const std::byte> bytes);
  // The next whole record, or nothing while it is not all there or once the stream is damaged (problem() says
  // where and why; nothing is read after it). Keep-alives are records too.
  std::optional<StreamedEvent> next();

  const std::string& problem() const noexcept { return problem_; }
  // Bytes of a record begun and not finished: at the end of the stream, a record cut short.
  std::size_t pending_bytes() const noexcept { return buffer_.size() - start_; }
  std::uint64_t offset() const noexcept { return offset_; }  // of the next record in the stream

 private:
  bool fail(std::string problem);
  std::vector<std::byte> buffer_;
  std::size_t start_ = 0;    // of the next record in buffer_
  std::uint64_t offset_ = 0;  // of buffer_[start_] in the stream
  std::uint64_t last_sequence_ = 0;
  std::uint64_t last_dropped_ = 0;
  std::string problem_;
};

}  // namespace daqx::evb
