// Small text helpers shared by the partition parser, the parameter checks and messages.
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>

namespace daqx::strings {

inline char lower(char c) noexcept { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

inline bool equals_ignoring_case(std::string_view a, std::string_view b) noexcept {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (lower(a[i]) != lower(b[i])) return false;
  return true;
}

inline std::string_view trim(std::string_view text) noexcept {
  constexpr std::string_view blanks = " \t\r\n";
  const std::size_t first = text.find_first_not_of(blanks);
  if (first == std::string_view::npos) return {};
  const std::size_t last = text.find_last_not_of(blanks);
  return text.substr(first, last - first + 1);
}

// Builds a message from its parts: chains of `"literal" + std::string` trip a false -Wrestrict in GCC 12
// (bug 105329).
inline std::string concatenate(std::initializer_list<std::string_view> parts) {
  std::string text;
  for (std::string_view part : parts) text += part;
  return text;
}

}  // namespace daqx::strings
