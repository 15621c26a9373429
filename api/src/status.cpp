// Text for the data-path status codes, for logs and counters.
#include "daqx/api/status.hpp"

namespace daqx {

std::string_view to_string(SendStatus status) noexcept {
  switch (status) {
    case SendStatus::ok: return "ok";
    case SendStatus::would_block: return "would block";
    case SendStatus::no_route: return "no route";
    case SendStatus::error: return "error";
  }
  return "?";
}

}  // namespace daqx
