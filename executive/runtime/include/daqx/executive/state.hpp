// The per-application state machine: Halted -> Configured -> Enabled, back by Stop and Halt, Failed on error.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace daqx {

enum class State { halted, configured, enabled, failed };
enum class Command { configure, enable, stop, halt };

std::string_view to_string(State state) noexcept;    // "Halted", "Configured", "Enabled", "Failed"
std::string_view to_string(Command command) noexcept;  // "configure", "enable", "stop", "halt"
std::optional<Command> command_from_string(std::string_view text) noexcept;  // case-insensitive

// The state a command leads to from `from`, or nothing when the transition is illegal.
// Legal: Halted-configure->Configured, Configured-enable->Enabled, Enabled-stop->Configured,
// Configured-halt->Halted, Failed-halt->Halted (recovery), and Halted-halt->Halted (idempotent).
std::optional<State> next_state(State from, Command command) noexcept;

// "cannot enable from Halted: configure first" and the like.
std::string illegal_transition_reason(State from, Command command);

}  // namespace daqx
