// Minimal logging seam shared by every daqx component: the executive installs its sink, tests capture it.
#pragma once

#include <functional>
#include <string_view>

namespace daqx {

enum class LogLevel { debug, info, warning, error };

using LogSink = std::function<void(LogLevel, std::string_view component, std::string_view message)>;

// Replaces the process-wide sink; an empty sink restores the default (stderr).
void set_log_sink(LogSink sink);
void log(LogLevel level, std::string_view component, std::string_view message);

std::string_view to_string(LogLevel level) noexcept;

}  // namespace daqx
