// Small helpers for parameter declarations (defaults written from the Configuration structs) and messages.
#pragma once

#include <charconv>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "daqx/api/parameters.hpp"

namespace daqx::apps {

inline std::string to_text(std::uint64_t value) { return std::to_string(value); }
inline std::string to_text(bool value) { return value ? "true" : "false"; }
inline std::string to_text(double value) {
  char buffer[32];
  const auto result = std::to_chars(buffer, buffer + sizeof buffer, value);
  return std::string(buffer, result.ptr);
}

// One declared parameter; every field spelled out in one call (name, type, default, unit, help, bounds).
inline ParamSpec param(std::string name, ParamType type, std::string default_value, std::string unit,
                       std::string help, std::optional<double> min = std::nullopt,
                       std::optional<double> max = std::nullopt) {
  ParamSpec spec;
  spec.name = std::move(name);
  spec.type = type;
  spec.default_value = std::move(default_value);
  spec.unit = std::move(unit);
  spec.help = std::move(help);
  spec.min = min;
  spec.max = max;
  return spec;
}

// A parameter with a check beyond its type, bounds and choices, run wherever a value enters (ParamSpec::check).
inline ParamSpec checked_by(ParamSpec spec, ParamCheck check) {
  spec.check = std::move(check);
  return spec;
}

// A parameter of type applications naming whom frames come from, not where they go: it plans no connection.
inline ParamSpec receiving_from(ParamSpec spec) {
  spec.peers = PeerUse::receives_from;
  return spec;
}

// A string parameter that holds one of a few words.
inline ParamSpec choice_param(std::string name, std::string default_value, std::string help,
                              std::vector<std::string> allowed) {
  ParamSpec spec = param(std::move(name), ParamType::string, std::move(default_value), "", std::move(help));
  spec.allowed = std::move(allowed);
  return spec;
}

// Joins parts into one message (chains of "literal" + std::string trip a false -Wrestrict in GCC 12).
inline std::string concatenate(std::initializer_list<std::string_view> parts) {
  std::string text;
  for (std::string_view part : parts) text += part;
  return text;
}

}  // namespace daqx::apps
