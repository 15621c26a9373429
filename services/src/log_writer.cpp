// Formatting log records and writing each with one write(2): the executive's sink and the default one.
#include "daqx/services/log_writer.hpp"

#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <memory>

namespace daqx {
namespace {

std::int64_t now_ns() noexcept {
  timespec now{};
  clock_gettime(CLOCK_REALTIME, &now);
  return static_cast<std::int64_t>(now.tv_sec) * 1'000'000'000 + now.tv_nsec;
}

}  // namespace

void write_log_bytes(int fd, std::string_view bytes) noexcept {
  while (!bytes.empty()) {
    const ssize_t written = ::write(fd, bytes.data(), bytes.size());
    if (written < 0) {
      if (errno == EINTR) continue;
      return;
    }
    bytes.remove_prefix(static_cast<std::size_t>(written));
  }
}

LogSink make_log_writer(int fd, std::string context, LogFormat format) {
  // Shared, because a std::function must be copyable; the log's lock keeps its users one at a time.
  auto line = std::make_shared<std::string>();
  line->reserve(512);
  return [fd, context = std::move(context), format, line](LogLevel level, std::string_view component,
                                                           std::string_view message) {
    line->clear();
    append_log_line(*line, LogRecord{now_ns(), level, context, component, message, log_run()}, format);
    write_log_bytes(fd, *line);
  };
}

}  // namespace daqx
