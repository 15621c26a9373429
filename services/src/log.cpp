// Process-wide log sink (stderr in the text format by default, replaceable by the executive or a test), the
// level filter and the current run every line carries.
#include "daqx/services/log.hpp"

#include <unistd.h>

#include <atomic>
#include <mutex>
#include <string>

#include "daqx/services/log_writer.hpp"

namespace daqx {
namespace {

std::mutex& sink_mutex() {
  static std::mutex mutex;
  return mutex;
}
LogSink& current_sink() {
  static LogSink sink;
  return sink;
}
LogSink& default_sink() {
  static LogSink sink = make_log_writer(STDERR_FILENO, "", LogFormat::text);
  return sink;
}

std::atomic<LogLevel> minimum_level{LogLevel::info};
std::atomic<std::uint64_t> current_run{0};

}  // namespace

std::string_view to_string(LogLevel level) noexcept {
  switch (level) {
    case LogLevel::debug: return "debug";
    case LogLevel::info: return "info";
    case LogLevel::warning: return "warning";
    case LogLevel::error: return "error";
  }
  return "?";
}

std::optional<LogLevel> log_level_from_string(std::string_view text) noexcept {
  for (LogLevel level : {LogLevel::debug, LogLevel::info, LogLevel::warning, LogLevel::error})
    if (text == to_string(level)) return level;
  return std::nullopt;
}

void set_log_level(LogLevel minimum) noexcept { minimum_level.store(minimum, std::memory_order_relaxed); }
LogLevel log_level() noexcept { return minimum_level.load(std::memory_order_relaxed); }

void set_log_run(std::uint64_t run) noexcept { current_run.store(run, std::memory_order_relaxed); }
std::uint64_t log_run() noexcept { return current_run.load(std::memory_order_relaxed); }

void set_log_sink(LogSink sink) {
  std::lock_guard lock(sink_mutex());
  current_sink() = std::move(sink);
}

void log(LogLevel level, std::string_view component, std::string_view message) {
  if (!log_enabled(level)) return;  // filtered before the lock: a dropped line costs one relaxed load
  // Logging is never on a data path, so one lock keeps lines whole and the sink swappable.
  std::lock_guard lock(sink_mutex());
  if (current_sink()) {
    current_sink()(level, component, message);
    return;
  }
  default_sink()(level, component, message);
}

}  // namespace daqx
