// Reading a host's limits from its executive's answer.
#include "remote_limits.hpp"

#include "engine.hpp"

namespace daqx::launch {

HostLimits read_host_limits(const CommandResult& answer, const std::string& where) {
  if (!answer.ok()) throw LaunchError(where + ": its limits cannot be asked (" + std::string(kHostLimitsArgument) + "): " + answer.describe());
  std::string text = answer.output;
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  const std::size_t line = text.rfind('\n');
  if (line != std::string::npos) text.erase(0, line + 1);  // after what a login script printed
  std::string error;
  const std::optional<HostLimits> limits = HostLimits::parse(text, error);
  if (!limits) throw LaunchError(where + ": its executive's " + kHostLimitsArgument + " answered: " + error);
  return *limits;
}

}  // namespace daqx::launch
