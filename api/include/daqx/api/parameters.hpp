// Self-describing parameters: every application and transport tunable is declared once, with its type,
// default, unit and help, so the executive validates it, shows it and lists it (like `fi_info -e`).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace daqx {

enum class ParamType {
  boolean,      // true/false
  integer,      // signed 64-bit
  unsigned_integer,  // unsigned 64-bit
  real,         // double
  string,
  string_list,  // comma-separated
  applications  // a selector resolved at configure time to application TIDs: "class:NAME", or ids "3,4,5"
};

std::string_view to_string(ParamType type) noexcept;
// Accepts the names used in partitions: bool, int, unsigned, double, string, list, applications.
std::optional<ParamType> param_type_from_string(std::string_view name) noexcept;

// What an application does with the applications a parameter of type applications names. The executive plans
// connections from it: a context connects to another only where one of its applications sends (daqx-executive
// --check and /api/transports show the plan); a frame to anyone else opens its connection at first use.
enum class PeerUse {
  sends_to,      // it sends them frames
  receives_from  // it only expects frames from them (their own parameters say where they send)
};

struct ParamSpec {
  std::string name;
  ParamType type = ParamType::string;
  std::string default_value;  // in the partition's text form; must itself be valid
  std::string unit;           // "bytes", "frames", "s", "" for none
  std::string help;           // one line
  std::optional<double> min;  // numeric bounds, inclusive
  std::optional<double> max;
  // For a string: the only words it may hold (empty: any text). Listed by --list-params and checked with the
  // partition, so "waitMode=spin" is refused before anything starts rather than when the transport is made.
  std::vector<std::string> allowed = {};  // an initializer, so declarations that stop at max need not name it
  PeerUse peers = PeerUse::sends_to;      // for ParamType::applications
};

// Checks text against a spec; returns an empty string when valid, else the reason ("not an unsigned
// integer: '12x'", "below the minimum 1", "'spin' is not epoll or busy").
std::string validate_param(const ParamSpec& spec, std::string_view text);
// A bound in the parameter's own type: "4096" for an integer or unsigned, "0.5" for a double.
std::string param_bound_text(const ParamSpec& spec, double bound);

// The configured values of one application or transport, validated against its specs.
class ParamSet {
 public:
  ParamSet() = default;
  explicit ParamSet(std::vector<ParamSpec> specs);

  const std::vector<ParamSpec>& specs() const noexcept { return specs_; }
  const ParamSpec* spec(std::string_view name) const noexcept;
  // Sets a value after validation; returns the reason when refused (unknown name or bad value).
  std::string set(std::string_view name, std::string_view text);
  // The current text value (configured or default). Throws std::out_of_range for an undeclared name.
  const std::string& text(std::string_view name) const;

  bool boolean(std::string_view name) const;
  std::int64_t integer(std::string_view name) const;
  std::uint64_t unsigned_integer(std::string_view name) const;
  double real(std::string_view name) const;
  const std::string& string(std::string_view name) const { return text(name); }
  std::vector<std::string> list(std::string_view name) const;
  // For ParamType::applications: the TIDs the executive resolved at configure time.
  const std::vector<std::uint32_t>& applications(std::string_view name) const;
  void set_resolved(std::string_view name, std::vector<std::uint32_t> tids);

 private:
  std::vector<ParamSpec> specs_;
  std::map<std::string, std::string, std::less<>> values_;
  std::map<std::string, std::vector<std::uint32_t>, std::less<>> resolved_;
};

}  // namespace daqx
