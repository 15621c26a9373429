// The process's open-file limit: raised to what the system allows before connections are made, since a
// partition of hundreds of contexts needs more descriptors than the usual soft limit of 1024.
#pragma once

#include <cstddef>

namespace daqx {

struct OpenFileLimit {
  std::size_t soft = 0;  // what the process may open now
  std::size_t hard = 0;  // what it could raise soft to
};

// Raises the soft limit to the hard limit (once is enough; again changes nothing) and returns both.
OpenFileLimit raise_open_file_limit() noexcept;

}  // namespace daqx
