// Raising the open-file limit.
#include "daqx/services/open_file_limit.hpp"

#include <sys/resource.h>

namespace daqx {

OpenFileLimit raise_open_file_limit() noexcept {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return {};
  if (limit.rlim_cur < limit.rlim_max) {
    rlimit raised = limit;
    raised.rlim_cur = limit.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &raised) == 0) limit = raised;
  }
  const auto size = [](rlim_t value) {
    return value == RLIM_INFINITY ? static_cast<std::size_t>(-1) : static_cast<std::size_t>(value);
  };
  return OpenFileLimit{size(limit.rlim_cur), size(limit.rlim_max)};
}

}  // namespace daqx
