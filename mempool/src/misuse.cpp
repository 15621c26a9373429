// What happens when buffer misuse is detected: log it and, in DAQX_CHECKS builds, stop right there.
#include "daqx/mempool/misuse.hpp"

#include <cstdlib>
#include <mutex>
#include <string>
#include <utility>

#include "daqx/services/log.hpp"

namespace daqx::mem {
namespace {

std::mutex& handler_mutex() {
  static std::mutex mutex;
  return mutex;
}
MisuseHandler& current_handler() {
  static MisuseHandler handler;
  return handler;
}

}  // namespace

std::string_view to_string(Misuse kind) noexcept {
  switch (kind) {
    case Misuse::double_release: return "double release";
    case Misuse::use_after_release: return "use after release";
    case Misuse::leak: return "leak";
    case Misuse::bad_window: return "bad window";
    case Misuse::shared_mutation: return "change to a shared block";
  }
  return "?";
}

MisuseHandler set_misuse_handler(MisuseHandler handler) {
  std::lock_guard lock(handler_mutex());
  return std::exchange(current_handler(), std::move(handler));
}

void report_misuse(Misuse kind, std::string_view detail) {
  MisuseHandler handler;
  {
    std::lock_guard lock(handler_mutex());
    handler = current_handler();
  }
  if (handler) {
    handler(kind, detail);
    return;
  }
  std::string message = std::string(to_string(kind)) + ": " + std::string(detail);
  log(LogLevel::error, "mempool", message);
  if constexpr (kChecks) std::abort();
}

}  // namespace daqx::mem
