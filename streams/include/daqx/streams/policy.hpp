// What a subscriber of a stream declares: how the publisher treats it when it cannot keep up. Only `block` may
// slow the publisher; every other policy bounds what the subscriber holds (depth) and drops by its own rule,
// counted, so that a slow or stopped subscriber costs the publisher and the other subscribers nothing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace daqx::streams {

enum class PolicyKind : std::uint8_t {
  block = 1,        // every event: the publisher waits (back-pressure) while this subscriber has `depth` pending
  drop_newest = 2,  // with `depth` pending, a new event is dropped
  drop_oldest = 3,  // with `depth` pending, the oldest event not yet sent is dropped for the new one
  sample = 4,       // one in `every` offered events and at most `max_rate` a second; then as drop_newest
  keep_last = 5,    // an event not yet sent is replaced by a newer one of the same key; then as drop_oldest
};

inline constexpr std::uint32_t kMaxDepth = 4096;
inline constexpr std::uint32_t kDefaultDepth = 64;
inline constexpr std::uint32_t kMaxEvery = 1'000'000'000;
inline constexpr double kMaxRate = 1e6;
inline constexpr std::size_t kMaxStreamName = 64;

struct Policy {
  PolicyKind kind = PolicyKind::drop_newest;
  std::uint32_t every = 1;          // sample: one in `every` (1..kMaxEvery)
  double max_rate = 0;              // sample: at most this many events a second (0: no limit; else 0.001..kMaxRate)
  std::uint32_t depth = kDefaultDepth;  // events queued or in flight, not yet acknowledged (1..kMaxDepth)

  bool operator==(const Policy&) const = default;
};

// The policy in its one text form, used by partitions, the control port's query and command lines:
//   block | drop-newest | drop-oldest | keep-last | sample:N | rate:R | sample:N/rate:R
// optionally followed by ",depth:D". Numbers by daqx's strict parser (daqx/services/number_text.hpp).
// Examples: "block,depth:256", "sample:100", "rate:5", "sample:10/rate:2,depth:4".
struct ParsedPolicy {
  std::optional<Policy> policy;
  std::string error;  // empty exactly when policy holds one: the reason, one printable line
};
ParsedPolicy parse_policy(std::string_view text);
std::string to_string(const Policy& policy);
std::string_view to_string(PolicyKind kind) noexcept;
// A policy that came as numbers (a subscribe frame): the reason it is out of range, or "".
std::string check_policy(const Policy& policy);

// A stream's name: 1 to 64 characters of [A-Za-z0-9._-]. The reason it is not one, or "".
std::string check_stream_name(std::string_view name);

}  // namespace daqx::streams
