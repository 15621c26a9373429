// Log records as text or JSON lines: the timestamp without locale, the escaping that keeps a record on one
// line, and JSON that parses whatever bytes a message holds.
#include "daqx/services/log_line.hpp"
#include "daqx/services/text.hpp"

#include <time.h>

#include <cstdio>

namespace daqx {
namespace {

constexpr char kHex[] = "0123456789abcdef";

void append_decimal(std::string& out, std::uint64_t value) {
  char digits[20];
  int count = 0;
  do {
    digits[count++] = static_cast<char>('0' + value % 10);
    value /= 10;
  } while (value != 0);
  while (count > 0) out.push_back(digits[--count]);
}

// Text: control characters would split a record or move the cursor; everything else is the author's.
void append_text_escaped(std::string& out, std::string_view text) {
  for (char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == '\n') out += "\\n";
    else if (c == '\r') out += "\\r";
    else if (c == '\t') out += "\\t";
    else if (byte < 0x20 || byte == 0x7f) {
      out += "\\x";
      out.push_back(kHex[byte >> 4]);
      out.push_back(kHex[byte & 0xf]);
    } else {
      out.push_back(c);
    }
  }
}

void append_json_string(std::string& out, std::string_view text) {
  out.push_back('"');
  for (std::size_t i = 0; i < text.size();) {
    const char c = text[i];
    const auto byte = static_cast<unsigned char>(c);
    if (byte >= 0x80) {
      const std::size_t length = strings::utf8_sequence(text, i);
      if (length == 0) {
        out += "\\ufffd";  // one replacement per stray byte: a shipper must not choke on a bad message
        ++i;
      } else {
        out.append(text.substr(i, length));
        i += length;
      }
      continue;
    }
    ++i;
    if (c == '"') out += "\\\"";
    else if (c == '\\') out += "\\\\";
    else if (c == '\n') out += "\\n";
    else if (c == '\r') out += "\\r";
    else if (c == '\t') out += "\\t";
    else if (byte < 0x20 || byte == 0x7f) {
      out += "\\u00";
      out.push_back(kHex[byte >> 4]);
      out.push_back(kHex[byte & 0xf]);
    } else {
      out.push_back(c);
    }
  }
  out.push_back('"');
}

}  // namespace

std::optional<LogFormat> log_format_from_string(std::string_view text) noexcept {
  if (text == "text") return LogFormat::text;
  if (text == "json") return LogFormat::json;
  return std::nullopt;
}

void append_utc_time(std::string& out, std::int64_t time_ns) {
  std::int64_t seconds = time_ns / 1'000'000'000;
  std::int64_t nanoseconds = time_ns % 1'000'000'000;
  if (nanoseconds < 0) {  // before 1970: round towards the past, as the calendar does
    nanoseconds += 1'000'000'000;
    --seconds;
  }
  const time_t whole = static_cast<time_t>(seconds);
  struct tm calendar {};
  if (gmtime_r(&whole, &calendar) == nullptr) {
    out += "0000-00-00T00:00:00.000000Z";
    return;
  }
  char text[48];
  const int length = std::snprintf(text, sizeof text, "%04d-%02d-%02dT%02d:%02d:%02d.%06dZ", calendar.tm_year + 1900,
                                   calendar.tm_mon + 1, calendar.tm_mday, calendar.tm_hour, calendar.tm_min,
                                   calendar.tm_sec, static_cast<int>(nanoseconds / 1000));
  if (length > 0) out.append(text, static_cast<std::size_t>(length) < sizeof text ? length : sizeof text - 1);
}

void append_log_line(std::string& line, const LogRecord& record, LogFormat format) {
  const std::string_view level = to_string(record.level);
  if (format == LogFormat::json) {
    line += "{\"time\":\"";
    append_utc_time(line, record.time_ns);
    line += "\",\"level\":";
    append_json_string(line, level);
    line += ",\"context\":";
    append_json_string(line, record.context);
    line += ",\"component\":";
    append_json_string(line, record.component);
    line += ",\"message\":";
    append_json_string(line, record.message);
    if (record.run != 0) {
      line += ",\"run\":";
      append_decimal(line, record.run);
    }
    line += "}\n";
    return;
  }
  append_utc_time(line, record.time_ns);
  line.push_back(' ');
  line += level;
  // Padded to the longest level ("warning"), so the contexts line up in a terminal.
  line.append(level.size() < 7 ? 7 - level.size() : 0, ' ');
  line.push_back(' ');
  if (record.context.empty()) line.push_back('-');
  else append_text_escaped(line, record.context);
  if (record.run != 0) {
    line += " run=";
    append_decimal(line, record.run);
  }
  line.push_back(' ');
  append_text_escaped(line, record.component);
  line += ": ";
  append_text_escaped(line, record.message);
  line.push_back('\n');
}

}  // namespace daqx
