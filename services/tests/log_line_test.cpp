// Log lines as people and log shippers read them: the text layout, JSON that always parses, the level filter.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "daqx/services/log.hpp"
#include "daqx/services/log_line.hpp"
#include "daqx/services/log_writer.hpp"

using daqx::LogFormat;
using daqx::LogLevel;
using daqx::LogRecord;

namespace {

// 2026-11-25T03:10:00.123456Z
constexpr std::int64_t kTime = 1'795'576'200'123'456'789;

std::string line_of(const LogRecord& record, LogFormat format) {
  std::string line;
  daqx::append_log_line(line, record, format);
  return line;
}

// Restores the process-wide log settings a test changed.
struct LogSettingsGuard {
  LogLevel level = daqx::log_level();
  ~LogSettingsGuard() {
    daqx::set_log_sink({});
    daqx::set_log_level(level);
    daqx::set_log_run(0);
  }
};

}  // namespace

TEST_CASE("a text line is UTC time with microseconds, padded level, context, component and message", "[log]") {
  const LogRecord record{kTime, LogLevel::info, "http://host:9001", "evb/bu/1", "message", 0};
  CHECK(line_of(record, LogFormat::text) == "2026-11-25T03:10:00.123456Z info    http://host:9001 evb/bu/1: message\n");
  LogRecord warning = record;
  warning.level = LogLevel::warning;
  CHECK(line_of(warning, LogFormat::text) == "2026-11-25T03:10:00.123456Z warning http://host:9001 evb/bu/1: message\n");
}

TEST_CASE("a text line carries run=N after the context while a run is on", "[log]") {
  const LogRecord record{kTime, LogLevel::error, "http://host:9001", "pt/tcp", "down", 1234};
  CHECK(line_of(record, LogFormat::text) == "2026-11-25T03:10:00.123456Z error   http://host:9001 run=1234 pt/tcp: down\n");
}

TEST_CASE("a text line outside an executive shows - for the context", "[log]") {
  const LogRecord record{0, LogLevel::debug, "", "mempool", "x", 0};
  CHECK(line_of(record, LogFormat::text) == "1970-01-01T00:00:00.000000Z debug   - mempool: x\n");
}

TEST_CASE("a text message stays on one line: control characters are escaped", "[log]") {
  const LogRecord record{kTime, LogLevel::info, "c", "x", "a\nb\tc\rd\x01" "e\x7f", 0};
  CHECK(line_of(record, LogFormat::text) == "2026-11-25T03:10:00.123456Z info    c x: a\\nb\\tc\\rd\\x01e\\x7f\n");
}

TEST_CASE("times before and after the epoch and at a leap day format as the calendar says", "[log]") {
  std::string text;
  daqx::append_utc_time(text, 951'782'400'000'001'000);  // 2000-02-29T00:00:00.000001Z
  CHECK(text == "2000-02-29T00:00:00.000001Z");
  text.clear();
  daqx::append_utc_time(text, -1'000);  // a microsecond before 1970
  CHECK(text == "1969-12-31T23:59:59.999999Z");
}

TEST_CASE("a JSON line has time, level, context, component and message, and run only while one is on", "[log]") {
  LogRecord record{kTime, LogLevel::warning, "http://host:9001", "evb/bu/1", "slow", 0};
  CHECK(line_of(record, LogFormat::json) ==
        R"({"time":"2026-11-25T03:10:00.123456Z","level":"warning","context":"http://host:9001",)"
        R"("component":"evb/bu/1","message":"slow"})" "\n");
  record.run = 9007199254740991ull;
  CHECK(line_of(record, LogFormat::json) ==
        R"({"time":"2026-11-25T03:10:00.123456Z","level":"warning","context":"http://host:9001",)"
        R"("component":"evb/bu/1","message":"slow","run":9007199254740991})" "\n");
}

TEST_CASE("JSON escapes quotes, backslashes and control characters", "[log]") {
  const LogRecord record{kTime, LogLevel::info, "c", "a\"b", "q\"\\\n\t\r\x01\x1f\x7f/", 0};
  const std::string line = line_of(record, LogFormat::json);
  CHECK_THAT(line, Catch::Contains(R"("component":"a\"b")"));
  CHECK_THAT(line, Catch::Contains(R"("message":"q\"\\\n\t\r\u0001\u001f\u007f/")"));
  CHECK(line.find('\n') == line.size() - 1);  // one record, one line
}

TEST_CASE("JSON keeps well-formed UTF-8 and replaces every byte that is not by U+FFFD", "[log]") {
  // é, €, 𝄞 are well-formed; then a stray continuation byte, a cut sequence, an overlong '/', a surrogate,
  // a code point past U+10FFFF and a byte that never appears in UTF-8.
  const std::string message = "\xc3\xa9\xe2\x82\xac\xf0\x9d\x84\x9e|\x80|\xe2\x82|\xc0\xaf|\xed\xa0\x80|\xf4\x90\x80\x80|\xff";
  const LogRecord record{kTime, LogLevel::info, "c", "x", message, 0};
  const std::string line = line_of(record, LogFormat::json);
  CHECK_THAT(line, Catch::Contains("\"message\":\"\xc3\xa9\xe2\x82\xac\xf0\x9d\x84\x9e|\\ufffd|\\ufffd\\ufffd|"
                                   "\\ufffd\\ufffd|\\ufffd\\ufffd\\ufffd|\\ufffd\\ufffd\\ufffd\\ufffd|\\ufffd\""));
}

TEST_CASE("level and format names are read exactly", "[log]") {
  CHECK(daqx::log_level_from_string("debug") == LogLevel::debug);
  CHECK(daqx::log_level_from_string("warning") == LogLevel::warning);
  CHECK_FALSE(daqx::log_level_from_string("warn"));
  CHECK_FALSE(daqx::log_level_from_string("INFO"));
  CHECK(daqx::log_format_from_string("json") == LogFormat::json);
  CHECK(daqx::log_format_from_string("text") == LogFormat::text);
  CHECK_FALSE(daqx::log_format_from_string("xml"));
}

TEST_CASE("lines below the minimum level never reach the sink", "[log]") {
  LogSettingsGuard guard;
  std::vector<std::string> seen;
  daqx::set_log_sink([&](LogLevel, std::string_view, std::string_view message) { seen.emplace_back(message); });
  daqx::set_log_level(LogLevel::warning);
  daqx::log(LogLevel::debug, "t", "debug");
  daqx::log(LogLevel::info, "t", "info");
  daqx::log(LogLevel::warning, "t", "warning");
  daqx::log(LogLevel::error, "t", "error");
  CHECK(seen == std::vector<std::string>{"warning", "error"});
  CHECK_FALSE(daqx::log_enabled(LogLevel::info));
  daqx::set_log_level(LogLevel::debug);
  daqx::log(LogLevel::debug, "t", "debug");
  CHECK(seen.back() == "debug");
}

TEST_CASE("the writer puts context and current run on every line and lines from many threads never interleave",
          "[log]") {
  LogSettingsGuard guard;
  char path[] = "/tmp/daqx-log-XXXXXX";
  const int fd = ::mkstemp(path);
  REQUIRE(fd >= 0);
  daqx::set_log_sink(daqx::make_log_writer(fd, "http://h:1", LogFormat::text));
  daqx::set_log_run(42);
  constexpr int kThreads = 4;
  constexpr int kLines = 500;
  {
    std::vector<std::jthread> threads;
    for (int t = 0; t < kThreads; ++t)
      threads.emplace_back([t] {
        for (int i = 0; i < kLines; ++i)
          daqx::log(LogLevel::info, "thread/" + std::to_string(t), std::string(200, static_cast<char>('a' + t)));
      });
  }
  daqx::set_log_sink({});
  std::string text(static_cast<std::size_t>(::lseek(fd, 0, SEEK_END)), '\0');
  REQUIRE(::pread(fd, text.data(), text.size(), 0) == static_cast<ssize_t>(text.size()));
  ::close(fd);
  ::unlink(path);
  const std::regex layout(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z info    http://h:1 run=42 thread/(\d): ([a-d]{200}))");
  std::size_t lines = 0;
  for (std::size_t start = 0; start < text.size();) {
    const std::size_t end = text.find('\n', start);
    REQUIRE(end != std::string::npos);
    const std::string line = text.substr(start, end - start);
    std::smatch match;
    INFO(line);
    REQUIRE(std::regex_match(line, match, layout));
    CHECK(match[2].str() == std::string(200, static_cast<char>('a' + std::stoi(match[1].str()))));
    ++lines;
    start = end + 1;
  }
  CHECK(lines == kThreads * kLines);
}
