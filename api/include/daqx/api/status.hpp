// Data-path status codes (no exceptions on the data path), as UCX does.
#pragma once

#include <string_view>

namespace daqx {

enum class SendStatus {
  ok,           // taken: the frame is gone from the caller's Ref and will return to its pool when sent
  would_block,  // no room now (queue, socket or credits full): the caller keeps the frame; it is told
                // through on_send_ready() when to retry
  no_route,     // the target is not known or not reachable from here: the caller keeps the frame
  error         // the connection failed: the frame was released
};

std::string_view to_string(SendStatus status) noexcept;

}  // namespace daqx
