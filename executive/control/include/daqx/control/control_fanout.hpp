// Work that is not a control request (ssh copies, the launcher's readiness checks of processes) fanned out over a
// bounded number of threads; control requests go over a ControlRequestPool (control_request_pool.hpp).
#pragma once

#include <cstddef>
#include <functional>

#include "daqx/control/control_request_pool.hpp"  // kDefaultControlFanout, kMaxControlFanout

namespace daqx {

// Runs task(0) .. task(count - 1) on min(workers, count) threads (none when count is 0 or 1: on the caller's),
// each taking the next index as it finishes one, and returns once all have run. Tasks run concurrently, so what
// they share must be safe for that; what one throws is thrown here once all have ended.
void for_each_fanned_out(std::size_t count, unsigned workers, const std::function<void(std::size_t)>& task);

}  // namespace daqx
