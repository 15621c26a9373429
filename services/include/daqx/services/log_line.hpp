// How one log record becomes one line of text: the text layout people read and the JSON one log shippers
// parse (docs/operations.md, "Logs"). Pure formatting, no I/O, so tests check it byte for byte.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "daqx/services/log.hpp"

namespace daqx {

enum class LogFormat { text, json };

// "text" or "json"; nothing for anything else.
std::optional<LogFormat> log_format_from_string(std::string_view text) noexcept;

struct LogRecord {
  std::int64_t time_ns = 0;    // since 1970-01-01 UTC (the system clock)
  LogLevel level = LogLevel::info;
  std::string_view context;    // the executive's context URL; "" outside an executive
  std::string_view component;  // "executive", "pt/tcp", "evb/bu/1", ...
  std::string_view message;
  std::uint64_t run = 0;       // 0: no run on, and the line says nothing about runs
};

// Appends the record as one line, '\n' included, to `line` (which the caller may reuse to avoid allocating).
// text: 2026-11-25T03:10:00.123456Z info    http://host:9001 run=1234 evb/bu/1: message
//       time (UTC, microseconds), level padded to 7, context ("-" when empty), run=N only while a run is on,
//       component, ": ", the message with control characters escaped (\n, \t, \r, \\xHH) so a record stays
//       one line. Bytes from 0x80 up are left as they are.
// json: {"time":"2026-11-25T03:10:00.123456Z","level":"info","context":"http://host:9001",
//        "component":"evb/bu/1","message":"message","run":1234}  ("run" only while a run is on)
//       Strings are escaped as JSON asks; bytes that are not UTF-8 become U+FFFD, so the line always parses.
void append_log_line(std::string& line, const LogRecord& record, LogFormat format);

// 2026-11-25T03:10:00.123456Z: gmtime_r and digits, no locale; appended to `out`.
void append_utc_time(std::string& out, std::int64_t time_ns);

}  // namespace daqx
