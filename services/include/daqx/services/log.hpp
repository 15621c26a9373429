// Minimal logging seam shared by every daqx component: the executive installs its sink, tests capture it.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string_view>

namespace daqx {

enum class LogLevel { debug, info, warning, error };

using LogSink = std::function<void(LogLevel, std::string_view component, std::string_view message)>;

// Replaces the process-wide sink; an empty sink restores the default (stderr, text format: log_line.hpp).
void set_log_sink(LogSink sink);
void log(LogLevel level, std::string_view component, std::string_view message);

// Lines below the minimum level are dropped before any sink sees them (default: info). Cheap to ask, so a
// caller can skip building a debug message nobody will read.
void set_log_level(LogLevel minimum) noexcept;
LogLevel log_level() noexcept;
inline bool log_enabled(LogLevel level) noexcept { return level >= log_level(); }

// The run the process is taking part in (0: none), which every line carries while it is not 0. Set by the
// executive on enable and cleared when its applications leave Enabled.
void set_log_run(std::uint64_t run) noexcept;
std::uint64_t log_run() noexcept;

std::string_view to_string(LogLevel level) noexcept;
// "debug", "info", "warning", "error" (exactly these); nothing for anything else.
std::optional<LogLevel> log_level_from_string(std::string_view text) noexcept;

}  // namespace daqx
