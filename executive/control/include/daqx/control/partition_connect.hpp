// Opening every transport connection of many contexts ahead of a run (POST /api/connect) over a ControlRequestPool,
// for daqx-launch --drive --connect and daqxctl connect.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

#include "daqx/control/control_request_pool.hpp"

namespace daqx {

struct DownConnection {
  std::string protocol;
  std::string peer;    // the application (or context) it leads to
  std::string remote;  // the address it was opened to
};

// What one context said of its connections.
struct ContextConnections {
  std::string url;
  int status = 0;        // 200 all up, 504 not all up in time, 0 no answer, other: refused
  std::string error;     // no answer or refused: why
  std::size_t up = 0;
  std::size_t total = 0;
  std::vector<DownConnection> down;
  double seconds = 0;    // from the start to its answer
  bool answered() const noexcept { return status != 0; }
  bool all_up() const noexcept { return status == 200; }
};

// Every context is first asked to open its connections without waiting (all of them, so that the connections come
// up together; each answer within `ask_deadline`), then each one that took it to wait for its own within what is
// left of `limit`, all over `pool`. Results in the order of `urls`.
std::vector<ContextConnections> connect_contexts(const std::vector<std::string>& urls, std::chrono::milliseconds limit,
                                                 ControlRequestPool& pool, std::chrono::milliseconds ask_deadline);

}  // namespace daqx
