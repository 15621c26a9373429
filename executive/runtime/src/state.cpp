// The application state machine's names, legal transitions and the reasons given for illegal ones.
#include "daqx/executive/state.hpp"

#include "daqx/services/text.hpp"

namespace daqx {
namespace {

using strings::concatenate;
using strings::equals_ignoring_case;
using strings::lower;
using strings::trim;



// What the operator should do instead, for a command that is illegal in `from`.
std::string_view advice(State from, Command command) noexcept {
  switch (from) {
    case State::halted:
      return command == Command::enable ? "configure first" : "it is not enabled";
    case State::configured:
      return command == Command::configure ? "it is already configured; halt first to configure again"
                                           : "it is not enabled";
    case State::enabled:
      if (command == Command::configure) return "stop and halt first to configure again";
      if (command == Command::enable) return "it is already enabled";
      return "stop first";
    case State::failed: return "halt first to recover";
  }
  return "";
}

}  // namespace

std::string_view to_string(State state) noexcept {
  switch (state) {
    case State::halted: return "Halted";
    case State::configured: return "Configured";
    case State::enabled: return "Enabled";
    case State::failed: return "Failed";
  }
  return "?";
}

std::string_view to_string(Command command) noexcept {
  switch (command) {
    case Command::configure: return "configure";
    case Command::enable: return "enable";
    case Command::stop: return "stop";
    case Command::halt: return "halt";
  }
  return "?";
}

std::optional<Command> command_from_string(std::string_view text) noexcept {
  for (Command command : {Command::configure, Command::enable, Command::stop, Command::halt})
    if (equals_ignoring_case(text, to_string(command))) return command;
  return std::nullopt;
}

std::optional<State> next_state(State from, Command command) noexcept {
  switch (from) {
    case State::halted:
      if (command == Command::configure) return State::configured;
      if (command == Command::halt) return State::halted;  // idempotent, so a controller may always halt
      return std::nullopt;
    case State::configured:
      if (command == Command::enable) return State::enabled;
      if (command == Command::halt) return State::halted;
      return std::nullopt;
    case State::enabled:
      if (command == Command::stop) return State::configured;
      return std::nullopt;
    case State::failed:
      if (command == Command::halt) return State::halted;
      return std::nullopt;
  }
  return std::nullopt;
}

std::string illegal_transition_reason(State from, Command command) {
  if (next_state(from, command)) return {};  // legal: there is nothing to explain
  std::string reason = "cannot ";
  reason.append(to_string(command)).append(" from ").append(to_string(from)).append(": ").append(advice(from, command));
  return reason;
}

}  // namespace daqx
