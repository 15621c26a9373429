// The application state machine: names, the legal transitions and nothing else, and the reasons given.
#include <catch2/catch.hpp>

#include <map>
#include <optional>
#include <string>
#include <utility>

#include "daqx/executive/state.hpp"

using namespace daqx;

namespace {

constexpr State kStates[] = {State::halted, State::configured, State::enabled, State::failed};
constexpr Command kCommands[] = {Command::configure, Command::enable, Command::stop, Command::halt};

}  // namespace

TEST_CASE("states and commands have the names operators see", "[state]") {
  CHECK(to_string(State::halted) == "Halted");
  CHECK(to_string(State::configured) == "Configured");
  CHECK(to_string(State::enabled) == "Enabled");
  CHECK(to_string(State::failed) == "Failed");
  CHECK(to_string(Command::configure) == "configure");
  CHECK(to_string(Command::enable) == "enable");
  CHECK(to_string(Command::stop) == "stop");
  CHECK(to_string(Command::halt) == "halt");
}

TEST_CASE("a command is read from its name in any case", "[state]") {
  for (Command command : kCommands) CHECK(command_from_string(to_string(command)) == command);
  CHECK(command_from_string("Configure") == Command::configure);
  CHECK(command_from_string("ENABLE") == Command::enable);
  CHECK(command_from_string("sToP") == Command::stop);
  CHECK_FALSE(command_from_string("start").has_value());
  CHECK_FALSE(command_from_string("").has_value());
  CHECK_FALSE(command_from_string("halt ").has_value());
}

TEST_CASE("exactly the documented transitions are legal", "[state]") {
  const std::map<std::pair<State, Command>, State> legal = {
      {{State::halted, Command::configure}, State::configured},
      {{State::configured, Command::enable}, State::enabled},
      {{State::enabled, Command::stop}, State::configured},
      {{State::configured, Command::halt}, State::halted},
      {{State::failed, Command::halt}, State::halted},
      {{State::halted, Command::halt}, State::halted},
  };
  for (State from : kStates) {
    for (Command command : kCommands) {
      INFO(to_string(command) << " from " << to_string(from));
      const auto expected = legal.find({from, command});
      const std::optional<State> next = next_state(from, command);
      if (expected == legal.end()) {
        CHECK_FALSE(next.has_value());
      } else {
        REQUIRE(next.has_value());
        CHECK(*next == expected->second);
      }
    }
  }
}

TEST_CASE("an illegal transition is explained with what to do instead", "[state]") {
  CHECK(illegal_transition_reason(State::halted, Command::enable) == "cannot enable from Halted: configure first");
  CHECK(illegal_transition_reason(State::halted, Command::stop) == "cannot stop from Halted: it is not enabled");
  CHECK(illegal_transition_reason(State::enabled, Command::halt) == "cannot halt from Enabled: stop first");
  CHECK(illegal_transition_reason(State::enabled, Command::configure) ==
        "cannot configure from Enabled: stop and halt first to configure again");
  CHECK(illegal_transition_reason(State::configured, Command::configure) ==
        "cannot configure from Configured: it is already configured; halt first to configure again");
  CHECK(illegal_transition_reason(State::failed, Command::configure) == "cannot configure from Failed: halt first to recover");
}

TEST_CASE("every illegal transition has a reason and no legal one has", "[state]") {
  for (State from : kStates) {
    for (Command command : kCommands) {
      INFO(to_string(command) << " from " << to_string(from));
      const std::string reason = illegal_transition_reason(from, command);
      if (next_state(from, command)) {
        CHECK(reason.empty());
      } else {
        const std::string prefix = "cannot " + std::string(to_string(command)) + " from " + std::string(to_string(from)) + ": ";
        CHECK(reason.rfind(prefix, 0) == 0);
        CHECK(reason.size() > prefix.size());
      }
    }
  }
}
