// Parameter types, the validation of parameter text against its declaration, and the typed set of values.
#include "daqx/api/parameters.hpp"

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
using strings::lower;
using strings::quoted;
using strings::trim;

std::optional<bool> parse_boolean(std::string_view text) noexcept {
  if (equals_ignoring_case(text, "true") || equals_ignoring_case(text, "yes") || text == "1") return true;
  if (equals_ignoring_case(text, "false") || equals_ignoring_case(text, "no") || text == "0") return false;
  return std::nullopt;
}

// The outcome of a full-string number parse: the value, or why there is none (so overflow reads differently
// from garbage).
template <typename Number>
struct Parsed {
  std::optional<Number> value;
  bool out_of_range = false;
};

// The whole text must be the number: from_chars alone would accept "12x" as 12, and accepts no "+" or
// blanks, which is what we want in a configuration file.
template <typename Number>
Parsed<Number> parse_number(std::string_view text) noexcept {
  Parsed<Number> parsed;
  if (text.empty()) return parsed;
  Number value{};
  const char* end = text.data() + text.size();
  const auto [where, error] = std::from_chars(text.data(), end, value);
  if (where != end) return parsed;
  if (error == std::errc::result_out_of_range) {
    parsed.out_of_range = true;
    return parsed;
  }
  if (error != std::errc()) return parsed;
  if constexpr (std::is_floating_point_v<Number>) {
    if (!std::isfinite(value)) return parsed;  // "inf" and "nan" are no sensible settings
  }
  parsed.value = value;
  return parsed;
}

// Bounds are doubles; show them as integers when they are, so messages read "the maximum 65535".
std::string bound_text(double bound) {
  if (std::floor(bound) == bound && std::fabs(bound) < 1e15) return std::to_string(static_cast<long long>(bound));
  char buffer[64];
  const auto [end, error] = std::to_chars(buffer, buffer + sizeof buffer, bound);
  if (error != std::errc()) return std::to_string(bound);
  return std::string(buffer, end);
}

std::string check_bounds(const ParamSpec& spec, double value, std::string_view text) {
  if (spec.min && value < *spec.min) return concatenate({text, " is below the minimum ", bound_text(*spec.min)});
  if (spec.max && value > *spec.max) return concatenate({text, " is above the maximum ", bound_text(*spec.max)});
  return {};
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
    const Parsed<std::uint32_t> id = parse_number<std::uint32_t>(item);
    if (!id.value || *id.value == 0)
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
    case ParamType::integer: {
      const Parsed<std::int64_t> parsed = parse_number<std::int64_t>(text);
      if (parsed.out_of_range) return concatenate({"out of range for a 64-bit integer: ", quoted(text)});
      if (!parsed.value) return concatenate({"not an integer: ", quoted(text)});
      return check_bounds(spec, static_cast<double>(*parsed.value), text);
    }
    case ParamType::unsigned_integer: {
      const Parsed<std::uint64_t> parsed = parse_number<std::uint64_t>(text);
      if (parsed.out_of_range) return concatenate({"out of range for a 64-bit unsigned integer: ", quoted(text)});
      if (!parsed.value) return concatenate({"not an unsigned integer: ", quoted(text)});
      return check_bounds(spec, static_cast<double>(*parsed.value), text);
    }
    case ParamType::real: {
      const Parsed<double> parsed = parse_number<double>(text);
      if (parsed.out_of_range) return concatenate({"out of range for a double: ", quoted(text)});
      if (!parsed.value) return concatenate({"not a number: ", quoted(text)});
      return check_bounds(spec, *parsed.value, text);
    }
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
  values_.find(name)->second = std::string(text);
  // A new selector makes the previous resolution stale; the executive resolves it again.
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
  const Parsed<std::int64_t> parsed = parse_number<std::int64_t>(value);
  if (!parsed.value) throw_wrong_type(name, value, "an integer");
  return *parsed.value;
}

std::uint64_t ParamSet::unsigned_integer(std::string_view name) const {
  const std::string& value = text(name);
  const Parsed<std::uint64_t> parsed = parse_number<std::uint64_t>(value);
  if (!parsed.value) throw_wrong_type(name, value, "an unsigned integer");
  return *parsed.value;
}

double ParamSet::real(std::string_view name) const {
  const std::string& value = text(name);
  const Parsed<double> parsed = parse_number<double>(value);
  if (!parsed.value) throw_wrong_type(name, value, "a number");
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
