#include "daqx/streams/policy.hpp"

#include <array>
#include <cstdio>
#include <utility>

#include "daqx/services/number_text.hpp"
#include "daqx/services/text.hpp"

namespace daqx::streams {
namespace {

constexpr std::array<std::pair<std::string_view, PolicyKind>, 4> kPlainKinds{{
    {"block", PolicyKind::block},
    {"drop-newest", PolicyKind::drop_newest},
    {"drop-oldest", PolicyKind::drop_oldest},
    {"keep-last", PolicyKind::keep_last},
}};

constexpr std::string_view kKinds = "block, drop-newest, drop-oldest, keep-last, sample:N, rate:R or sample:N/rate:R";

ParsedPolicy refused(std::string_view text, const std::string& why) {
  return {std::nullopt, "policy " + strings::quoted(text) + ": " + why};
}

// "sample:N", "rate:R" or "sample:N/rate:R" into policy; the reason it is not one, or "".
std::string read_sample(std::string_view text, Policy& policy) {
  policy.kind = PolicyKind::sample;
  bool seen_every = false;
  bool seen_rate = false;
  for (;;) {
    const std::size_t slash = text.find('/');
    const std::string_view item = text.substr(0, slash);
    const std::size_t colon = item.find(':');
    const std::string_view name = item.substr(0, colon);
    const std::string_view value = colon == std::string_view::npos ? std::string_view{} : item.substr(colon + 1);
    if (colon != std::string_view::npos && name == "sample" && !seen_every) {
      const auto every = numbers::parse<std::uint32_t>(value, 1, kMaxEvery);
      if (!every) return "sample: " + every.error;
      policy.every = *every;
      seen_every = true;
    } else if (colon != std::string_view::npos && name == "rate" && !seen_rate) {
      const auto rate = numbers::parse_real(value, 0.001, kMaxRate);
      if (!rate) return "rate: " + rate.error;
      policy.max_rate = *rate;
      seen_rate = true;
    } else {
      return "expected sample:N, rate:R or both once each, not " + strings::quoted(item);
    }
    if (slash == std::string_view::npos) return {};
    text = text.substr(slash + 1);
  }
}

}  // namespace

std::string_view to_string(PolicyKind kind) noexcept {
  switch (kind) {
    case PolicyKind::block: return "block";
    case PolicyKind::drop_newest: return "drop-newest";
    case PolicyKind::drop_oldest: return "drop-oldest";
    case PolicyKind::sample: return "sample";
    case PolicyKind::keep_last: return "keep-last";
  }
  return "unknown";
}

ParsedPolicy parse_policy(std::string_view text) {
  if (text.empty()) return refused(text, "empty: one of " + std::string(kKinds));
  Policy policy;
  std::string_view kind = text;
  if (const std::size_t comma = text.find(','); comma != std::string_view::npos) {
    kind = text.substr(0, comma);
    const std::string_view depth = text.substr(comma + 1);
    if (!depth.starts_with("depth:")) return refused(text, "after ',' only depth:D may follow");
    const auto parsed = numbers::parse<std::uint32_t>(depth.substr(6), 1, kMaxDepth);
    if (!parsed) return refused(text, "depth: " + parsed.error);
    policy.depth = *parsed;
  }
  bool known = false;
  for (const auto& [name, value] : kPlainKinds) {
    if (kind == name) {
      policy.kind = value;
      known = true;
    }
  }
  if (!known) {
    if (!kind.starts_with("sample:") && !kind.starts_with("rate:"))
      return refused(text, "unknown policy: one of " + std::string(kKinds));
    if (std::string why = read_sample(kind, policy); !why.empty()) return refused(text, why);
  }
  return {policy, {}};
}

std::string to_string(const Policy& policy) {
  std::string text;
  if (policy.kind != PolicyKind::sample) {
    text = std::string(to_string(policy.kind));
  } else {
    if (policy.every != 1 || policy.max_rate == 0) text = "sample:" + std::to_string(policy.every);
    if (policy.max_rate != 0) {
      char rate[32];
      std::snprintf(rate, sizeof rate, "%.17g", policy.max_rate);
      text += (text.empty() ? "rate:" : "/rate:") + std::string(rate);
    }
  }
  if (policy.depth != kDefaultDepth) text += ",depth:" + std::to_string(policy.depth);
  return text;
}

std::string check_policy(const Policy& policy) {
  if (policy.kind < PolicyKind::block || policy.kind > PolicyKind::keep_last) return "unknown policy kind";
  if (policy.depth < 1 || policy.depth > kMaxDepth) return "depth must be 1 to " + std::to_string(kMaxDepth);
  if (policy.every < 1 || policy.every > kMaxEvery) return "sample must be 1 to " + std::to_string(kMaxEvery);
  if (!(policy.max_rate == 0 || (policy.max_rate >= 0.001 && policy.max_rate <= kMaxRate)))
    return "rate must be 0 (none) or 0.001 to 1e6 a second";
  return {};
}

std::string check_stream_name(std::string_view name) {
  if (name.empty() || name.size() > kMaxStreamName)
    return "a stream name has 1 to 64 characters, not " + strings::quoted(name);
  for (const char c : name) {
    const bool allowed = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
                         c == '_' || c == '-';
    if (!allowed) return "a stream name has only A-Z, a-z, 0-9, '.', '_' and '-': " + strings::quoted(name);
  }
  return {};
}

}  // namespace daqx::streams
