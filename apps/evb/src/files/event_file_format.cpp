// Event file names and errors, as both the writer and the reader spell them.
#include "files/event_file_format.hpp"

#include <cstdio>
#include <cstring>
#include <stdexcept>

#include "daqx/apps/text.hpp"

namespace daqx::evb {

std::string event_file_name(std::uint32_t run, std::uint32_t builder, std::uint32_t sequence) {
  char name[64];
  std::snprintf(name, sizeof name, "run%06u_bu%u_%04u.daqx", run, builder, sequence);
  return name;
}

void throw_file_error(std::string_view what, const std::string& path, int error) {
  throw std::runtime_error(apps::concatenate({what, " ", path, ": ", std::strerror(error)}));
}

}  // namespace daqx::evb
