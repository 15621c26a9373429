// POST /api/connect's wait: the outgoing connections of every transport, asked to open and watched until all are
// up or the timeout passes, as a reply the server polls off its request threads.
#pragma once

#include <chrono>
#include <memory>

#include "control_routes.hpp"

namespace daqx::http {

// Takes one of the kMaxConnectWaits places in `pages` (nothing when all are taken: the caller answers 503 busy),
// asks the transports to open their connections, and returns the wait. Its poll() answers 200 once every outgoing
// connection is up, 504 naming those still down once `timeout` passes, and 503 once the executive is stopping
// (pages.stopping). The place is given back when the wait is released. `model` and `pages` must outlive it.
std::shared_ptr<PendingReply> start_connect_wait(ControlModel& model, Pages& pages, std::chrono::milliseconds timeout);

}  // namespace daqx::http
