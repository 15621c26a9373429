// A fixed number of workers, each taking the next task as it finishes one: a task that hangs takes one worker
// while the others go on with the rest.
#include "daqx/control/control_fanout.hpp"

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

namespace daqx {

void for_each_fanned_out(std::size_t count, unsigned workers, const std::function<void(std::size_t)>& task) {
  const std::size_t threads = std::min<std::size_t>(std::max(workers, 1u), count);
  if (threads <= 1) {
    for (std::size_t i = 0; i < count; ++i) task(i);
    return;
  }
  std::atomic<std::size_t> next{0};
  std::mutex failure_mutex;
  std::exception_ptr failure;  // the first thrown, guarded by failure_mutex
  const auto work = [&] {
    for (std::size_t i = next.fetch_add(1); i < count; i = next.fetch_add(1)) {
      try {
        task(i);
      } catch (...) {
        std::lock_guard lock(failure_mutex);
        if (!failure) failure = std::current_exception();
      }
    }
  };
  {
    std::vector<std::jthread> pool;
    pool.reserve(threads);
    for (std::size_t t = 0; t < threads; ++t) pool.emplace_back(work);
  }  // joined here
  if (failure) std::rethrow_exception(failure);
}

}  // namespace daqx
