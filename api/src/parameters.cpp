// Parameter types, the validation of parameter text against its declaration, and the typed set of values.
#include "daqx/api/parameters.hpp"

#include "daqx/services/number_text.hpp"
#include "daqx/services/text.hpp"

#include <charconv>
#include <initializer_list>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <system_error>
#include <type_traits>
#include <utility>

namespace daqx {
namespace {

using strings::concatenate;
using strings::equals_ignoring_case;
using strings::quoted;
using strings::trim;

std::optional<bool> parse_boolean(std::string_view text) noexcept {
  if (equals_ignoring_case(text, "true") || equals_ignoring_case(text, "yes") || text == "1") return true;
  if (equals_ignoring_case(text, "false") || equals_ignoring_case(text, "no") || text == "0") return false;
  return std::nullopt;
}

// A parameter's declared bounds (doubles) in the range of its integer type: what the parser checks against.
template <typename Integer>
std::pair<Integer, Integer> integer_bounds(const ParamSpec& spec) noexcept {
  constexpr double lowest = static_cast<double>(std::numeric_limits<Integer>::min());
  constexpr double highest = static_cast<double>(std::numeric_limits<Integer>::max());
  Integer min = std::numeric_limits<Integer>::min();
  Integer max = std::numeric_limits<Integer>::max();
  if (spec.min && std::ceil(*spec.min) > lowest) min = static_cast<Integer>(std::ceil(*spec.min));
  if (spec.max && std::floor(*spec.max) < highest) max = static_cast<Integer>(std::floor(*spec.max));
  return {min, max};
}

numbers::Parsed<std::int64_t> read_integer(const ParamSpec& spec, std::string_view text) {
  const auto [min, max] = integer_bounds<std::int64_t>(spec);
  return numbers::parse_signed(text, min, max);
}

numbers::Parsed<std::uint64_t> read_unsigned(const ParamSpec& spec, std::string_view text) {
  const auto [min, max] = integer_bounds<std::uint64_t>(spec);
  return numbers::parse_unsigned(text, min, max);
}

numbers::Parsed<double> read_real(const ParamSpec& spec, std::string_view text) {
  return numbers::parse_real(text, spec.min.value_or(std::numeric_limits<double>::lowest()),
                             spec.max.value_or(std::numeric_limits<double>::max()));
}

// Splits on commas; every item is trimmed of blanks.
std::vector<std::string_view> split_commas(std::string_view text) {
  std::vector<std::string_view> items;
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = text.find(',', start);
    items.push_back(trim(text.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start)));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return items;
}

std::string validate_list(std::string_view text) {
  if (trim(text).empty()) return {};
  for (std::string_view item : split_commas(text))
    if (item.empty()) return concatenate({"empty item in the list ", quoted(text)});
  return {};
}

// The selector's syntax only; whether the class or ids exist is known once the partition is (config::resolve_selector).
std::string validate_selector(std::string_view text) {
  const std::string_view selector = trim(text);
  if (selector.empty() || selector == "*") return {};
  constexpr std::string_view class_prefix = "class:";
  if (selector.substr(0, class_prefix.size()) == class_prefix) {
    if (trim(selector.substr(class_prefix.size())).empty()) return concatenate({"no class name after 'class:' in ", quoted(text)});
    return {};
  }
  for (std::string_view item : split_commas(selector)) {
    const numbers::Parsed<std::uint32_t> id = numbers::parse<std::uint32_t>(item, 1);
    if (!id)
      return concatenate({"not an application selector: ", quoted(text), " (expected class:NAME, *, or ids such as 3,4,5)"});
  }
  return {};
}

[[noreturn]] void throw_wrong_type(std::string_view name, std::string_view value, std::string_view wanted) {
  throw std::invalid_argument(concatenate({"parameter '", name, "' holds ", quoted(value), ", which is not ", wanted}));
}

}  // namespace

std::string_view to_string(ParamType type) noexcept {
  switch (type) {
    case ParamType::boolean: return "bool";
    case ParamType::integer: return "int";
    case ParamType::unsigned_integer: return "unsigned";
    case ParamType::real: return "double";
    case ParamType::string: return "string";
    case ParamType::string_list: return "list";
    case ParamType::applications: return "applications";
  }
  return "?";
}

std::optional<ParamType> param_type_from_string(std::string_view name) noexcept {
  for (ParamType type : {ParamType::boolean, ParamType::integer, ParamType::unsigned_integer, ParamType::real,
                         ParamType::string, ParamType::string_list, ParamType::applications})
    if (to_string(type) == name) return type;
  return std::nullopt;
}

std::string validate_param(const ParamSpec& spec, std::string_view text) {
  switch (spec.type) {
    case ParamType::boolean:
      if (!parse_boolean(text)) return concatenate({"not a boolean: ", quoted(text), " (expected true/false, yes/no or 1/0)"});
      return {};
    case ParamType::integer: return read_integer(spec, text).error;
    case ParamType::unsigned_integer: return read_unsigned(spec, text).error;
    case ParamType::real: return read_real(spec, text).error;
    case ParamType::string: {
      if (spec.allowed.empty()) return {};
      std::string words;
      for (std::size_t i = 0; i < spec.allowed.size(); ++i) {
        if (text == spec.allowed[i]) return {};
        if (i > 0) words.append(i + 1 == spec.allowed.size() ? " or " : ", ");
        words.append(spec.allowed[i]);
      }
      return concatenate({quoted(text), " is not ", words});
    }
    case ParamType::string_list: return validate_list(text);
    case ParamType::applications: return validate_selector(text);
  }
  return "unknown parameter type";
}

std::string param_bound_text(const ParamSpec& spec, double bound) {
  if (spec.type == ParamType::integer || spec.type == ParamType::unsigned_integer) {
    // Integer parameters have integer bounds; a bound that is not one is shown as declared.
    if (std::floor(bound) == bound && std::fabs(bound) < 9.2e18) return std::to_string(static_cast<long long>(bound));
  }
  char buffer[64];
  const auto [end, error] = std::to_chars(buffer, buffer + sizeof buffer, bound);
  if (error != std::errc()) return std::to_string(bound);
  return std::string(buffer, end);
}

ParamSet::ParamSet(std::vector<ParamSpec> specs) : specs_(std::move(specs)) {
  // A bad declaration is a bug in the module that made it: refuse it here rather than at the first read.
  for (const ParamSpec& declared : specs_) {
    if (!values_.emplace(declared.name, declared.default_value).second)
      throw std::invalid_argument(concatenate({"parameter '", declared.name, "' is declared twice"}));
    const std::string reason = validate_param(declared, declared.default_value);
    if (!reason.empty())
      throw std::invalid_argument(concatenate({"parameter '", declared.name, "' has an invalid default: ", reason}));
  }
  if (const std::string reason = run_checks(); !reason.empty())
    throw std::invalid_argument(concatenate({"the declared defaults fail their own check: ", reason}));
}

std::string ParamSet::run_checks() const {
  for (const ParamSpec& declared : specs_) {
    if (!declared.check) continue;
    // A check that throws (it read a parameter its class does not declare) refuses rather than escape a setter.
    try {
      if (std::string reason = declared.check(*this); !reason.empty()) return reason;
    } catch (const std::exception& error) {
      return concatenate({"the check of parameter '", declared.name, "' failed: ", error.what()});
    }
  }
  return {};
}

const ParamSpec* ParamSet::spec(std::string_view name) const noexcept {
  for (const ParamSpec& declared : specs_)
    if (declared.name == name) return &declared;
  return nullptr;
}

std::string ParamSet::set(std::string_view name, std::string_view text) {
  const ParamSpec* declared = spec(name);
  if (declared == nullptr) return concatenate({"unknown parameter '", name, "'"});
  std::string reason = validate_param(*declared, text);
  if (!reason.empty()) return reason;
  std::string& value = values_.find(name)->second;
  std::string previous = std::exchange(value, std::string(text));
  if (reason = run_checks(); !reason.empty()) {
    value = std::move(previous);
    return reason;
  }
  // A new selector makes the previous resolution stale; the executive resolves it again.
  if (const auto resolved = resolved_.find(name); resolved != resolved_.end()) resolved_.erase(resolved);
  return {};
}

std::string ParamSet::set_together(const std::vector<std::pair<std::string, std::string>>& assignments) {
  const auto previous = values_;
  const auto restore = [&](std::string reason) {
    values_ = previous;
    return reason;
  };
  for (const auto& [name, text] : assignments) {
    const ParamSpec* declared = spec(name);
    if (declared == nullptr) return restore(concatenate({"unknown parameter '", name, "'"}));
    if (std::string reason = validate_param(*declared, text); !reason.empty())
      return restore(concatenate({"parameter '", name, "': ", reason}));
    values_.find(name)->second = text;
  }
  if (std::string reason = run_checks(); !reason.empty()) return restore(std::move(reason));
  for (const auto& [name, text] : assignments)
    if (const auto resolved = resolved_.find(name); resolved != resolved_.end()) resolved_.erase(resolved);
  return {};
}

const std::string& ParamSet::text(std::string_view name) const {
  const auto value = values_.find(name);
  if (value == values_.end()) throw std::out_of_range(concatenate({"no parameter '", name, "'"}));
  return value->second;
}

bool ParamSet::boolean(std::string_view name) const {
  const std::string& value = text(name);
  const std::optional<bool> parsed = parse_boolean(value);
  if (!parsed) throw_wrong_type(name, value, "a boolean");
  return *parsed;
}

std::int64_t ParamSet::integer(std::string_view name) const {
  const std::string& value = text(name);
  const numbers::Parsed<std::int64_t> parsed = numbers::parse_signed(value);
  if (!parsed) throw_wrong_type(name, value, "an integer");
  return *parsed.value;
}

std::uint64_t ParamSet::unsigned_integer(std::string_view name) const {
  const std::string& value = text(name);
  const numbers::Parsed<std::uint64_t> parsed = numbers::parse_unsigned(value);
  if (!parsed) throw_wrong_type(name, value, "an unsigned integer");
  return *parsed.value;
}

double ParamSet::real(std::string_view name) const {
  const std::string& value = text(name);
  const numbers::Parsed<double> parsed = numbers::parse_real(value);
  if (!parsed) throw_wrong_type(name, value, "a number");
  return *parsed.value;
}

std::vector<std::string> ParamSet::list(std::string_view name) const {
  std::vector<std::string> items;
  const std::string& value = text(name);
  if (trim(value).empty()) return items;
  for (std::string_view item : split_commas(value))
    if (!item.empty()) items.emplace_back(item);
  return items;
}

const std::vector<std::uint32_t>& ParamSet::applications(std::string_view name) const {
  static const std::vector<std::uint32_t> none;
  const ParamSpec* declared = spec(name);
  if (declared == nullptr) throw std::out_of_range(concatenate({"no parameter '", name, "'"}));
  if (declared->type != ParamType::applications)
    throw std::invalid_argument(
        concatenate({"parameter '", name, "' is of type ", to_string(declared->type), ", not applications"}));
  const auto resolved = resolved_.find(name);
  return resolved == resolved_.end() ? none : resolved->second;
}

void ParamSet::set_resolved(std::string_view name, std::vector<std::uint32_t> tids) {
  const ParamSpec* declared = spec(name);
  if (declared == nullptr) throw std::out_of_range(concatenate({"no parameter '", name, "'"}));
  if (declared->type != ParamType::applications)
    throw std::invalid_argument(
        concatenate({"parameter '", name, "' is of type ", to_string(declared->type), ", not applications"}));
  resolved_.insert_or_assign(std::string(name), std::move(tids));
}

}  // namespace daqx
