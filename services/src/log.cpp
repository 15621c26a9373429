// Process-wide log sink: stderr by default, replaceable by the executive or a test.
#include "daqx/services/log.hpp"

#include <cstdio>
#include <mutex>
#include <string>

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

void set_log_sink(LogSink sink) {
  std::lock_guard lock(sink_mutex());
  current_sink() = std::move(sink);
}

void log(LogLevel level, std::string_view component, std::string_view message) {
  // Logging is never on a data path, so one lock keeps lines whole and the sink swappable.
  std::lock_guard lock(sink_mutex());
  if (current_sink()) {
    current_sink()(level, component, message);
    return;
  }
  std::fprintf(stderr, "[%.*s] %.*s: %.*s\n", static_cast<int>(to_string(level).size()), to_string(level).data(),
               static_cast<int>(component.size()), component.data(), static_cast<int>(message.size()),
               message.data());
}

}  // namespace daqx
