// The event stream reader: records cut from the stream's bytes, checked one at a time.
#include "files/event_stream_reader.hpp"

#include <utility>

#include "daqx/apps/text.hpp"

namespace daqx::evb {

using apps::concatenate;

void EventStreamReader::feed(std::span<const std::byte> bytes) {
  if (!problem_.empty()) return;
  // What was read already is let go before the buffer grows: it holds one record and what follows, no more.
  if (start_ > 0 && (start_ == buffer_.size() || start_ >= buffer_.size() / 2)) {
    buffer_.erase(buffer_.begin(), buffer_.begin() + static_cast<std::ptrdiff_t>(start_));
    start_ = 0;
  }
  buffer_.insert(buffer_.end(), bytes.begin(), bytes.end());
}

bool EventStreamReader::fail(std::string problem) {
  problem_ = concatenate({"stream offset ", std::to_string(offset_), ": ", problem});
  return false;
}

std::optional<StreamedEvent> EventStreamReader::next() {
  if (!problem_.empty()) return std::nullopt;
  const std::span<const std::byte> left = std::span<const std::byte>(buffer_).subspan(start_);
  if (left.size() < streams::kRecordHeaderBytes) return std::nullopt;
  auto parsed = streams::parse_record_header(left);
  if (!parsed.header) {
    fail(std::move(parsed.error));
    return std::nullopt;
  }
  const streams::RecordHeader& header = *parsed.header;
  const std::size_t total = streams::kRecordHeaderBytes + header.length;
  if (left.size() < total) return std::nullopt;

  StreamedEvent event;
  event.header = header;
  if (!event.keep_alive()) {
    // The publisher numbers the records it sends a subscriber 1, 2, 3...; what its policy dropped is counted in
    // `dropped`, never a missing number.
    if (last_sequence_ != 0 && header.sequence != last_sequence_ + 1) {
      fail(concatenate({"record ", std::to_string(header.sequence), " after record ", std::to_string(last_sequence_),
                        " (records are numbered one after the other)"}));
      return std::nullopt;
    }
    if (header.dropped < last_dropped_) {
      fail(concatenate({"record ", std::to_string(header.sequence), " counts ", std::to_string(header.dropped),
                        " events dropped, fewer than the ", std::to_string(last_dropped_), " before it"}));
      return std::nullopt;
    }
    event.bytes.assign(left.begin() + streams::kRecordHeaderBytes, left.begin() + static_cast<std::ptrdiff_t>(total));
    std::string problem = parse_event_record(event.bytes, offset_ + streams::kRecordHeaderBytes, event.record);
    if (!problem.empty()) {
      fail(concatenate({"record ", std::to_string(header.sequence), ": ", problem}));
      return std::nullopt;
    }
    if (event.record.bytes != event.bytes.size()) {
      fail(concatenate({"record ", std::to_string(header.sequence), ": ", std::to_string(event.bytes.size()),
                        " bytes hold an event record of ", std::to_string(event.record.bytes)}));
      return std::nullopt;
    }
    last_sequence_ = header.sequence;
    last_dropped_ = header.dropped;
  }
  start_ += total;
  offset_ += total;
  return event;
}

}  // namespace daqx::evb
