// Which process answers on a control URL: the pid and the launch instance GET /api/executive reports, so that a
// launcher drives only the executives it started and refuses one another launch (or anyone) started there.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace daqx {

// A launch instance: what daqx-launch gives every executive it starts (--launch-instance) and checks before it
// drives one. 1 to kMaxLaunchInstance characters of 0-9, a-z, A-Z and '-'.
inline constexpr std::size_t kMaxLaunchInstance = 64;
bool is_launch_instance(std::string_view text) noexcept;
// A new instance, 32 hexadecimal digits from the system's random source: no two launches share one.
std::string new_launch_instance();

// This process's launch instance, reported by GET /api/executive; empty when it was started without one. Set once,
// before the control server starts (daqx-executive's --launch-instance).
void set_launch_instance(std::string instance);
const std::string& launch_instance() noexcept;

// The identity part of a GET /api/executive answer.
struct ExecutiveIdentity {
  std::string partition;
  std::string context;   // the context URL the process plays
  long long pid = 0;     // on its host
  std::string instance;  // empty: started without one (by hand, by a launcher from before instances, by a test)

  // "daqx-executive pid 4242 of partition 'evb' (launch instance 3f2a...)", for messages.
  std::string describe() const;
};

// Reads it from the body of a GET /api/executive answer: nullopt when the body is not such an answer (not a JSON
// object, no pid, a field of the wrong type, an instance that is not one), whatever bytes it holds.
std::optional<ExecutiveIdentity> parse_executive_identity(std::string_view body);

}  // namespace daqx
