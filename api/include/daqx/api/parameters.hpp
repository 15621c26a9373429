// Self-describing parameters: every application and transport tunable is declared once, with its type,
// default, unit and help, so the executive validates it, shows it and lists it (like `fi_info -e`).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
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

class ParamSet;

// A check an application declares on one of its parameters beyond type, bounds and choices, often against its
// other parameters ("minEventsPerRequest not above maxEventsPerRequest"). It is given the values as they would
// be with the new one and returns the reason to refuse, or an empty string. It runs wherever a value enters
// (the partition at load, the parameters API at run time, a command line), so that a value is refused there and
// not at configure.
using ParamCheck = std::function<std::string(const ParamSet& values)>;

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
  ParamCheck check = {};                  // none: type, bounds and choices are all there is to check
};

// Checks text against a spec's type, bounds and choices (not its check, which needs the other values); returns
// an empty string when valid, else the reason ("'12x' is not an unsigned integer: only decimal digits are
// accepted", "'0' is out of range for an unsigned integer: below the minimum 1", "'spin' is not epoll or busy").
// Numbers are read by numbers::parse_* (daqx/services/number_text.hpp).
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
  // Sets a value after validation and the declared checks; returns the reason when refused (unknown name, bad
  // value, a check), and then nothing has changed.
  std::string set(std::string_view name, std::string_view text);
  // Sets values that take effect together (an application's properties in a partition), so that the checks see
  // them all and not the order they were written in; on a refusal nothing has changed.
  std::string set_together(const std::vector<std::pair<std::string, std::string>>& assignments);
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
  // The first refusal of the declared checks, or empty.
  std::string run_checks() const;

  std::vector<ParamSpec> specs_;
  std::map<std::string, std::string, std::less<>> values_;
  std::map<std::string, std::vector<std::uint32_t>, std::less<>> resolved_;
};

}  // namespace daqx
