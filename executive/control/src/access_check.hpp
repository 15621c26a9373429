// Who may do what on the control port: the bearer token check every request passes before any route, and the
// count of what it refused.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "daqx/api/counters.hpp"

namespace daqx::http {

struct AccessRules {
  std::string token;              // what requests that change anything must present; empty: all is open
  bool reads_need_token = false;  // GET and HEAD need it too
};

enum class Refusal {
  none,
  no_token,   // 401: no Authorization header, or not "Bearer <token>"
  bad_token,  // 403: a bearer token, but not ours
};

class AccessCheck {
 public:
  AccessCheck() = default;  // everything open, as an executive without <Control tokenFile=...>
  explicit AccessCheck(AccessRules rules) : rules_(std::move(rules)) {}

  // `authorization` is the Authorization header as sent, empty when absent. Counts each refusal. Every method
  // but GET and HEAD changes something (or might: POST /api/connect opens connections), so needs the token.
  Refusal check(std::string_view method, std::string_view authorization) const;
  // A connection that did not complete its TLS handshake (a plain HTTP client on the TLS port, say).
  void count_tls_refusal() const noexcept { tls_.fetch_add(1, std::memory_order_relaxed); }
  // A request not read whole within its deadline (sent too slowly, or never finished): answered 408, or closed.
  void count_deadline_refusal() const noexcept { deadline_.fetch_add(1, std::memory_order_relaxed); }
  // A request the HTTP parser refused (request line, header fields, their sizes): answered 400.
  void count_malformed_refusal() const noexcept { malformed_.fetch_add(1, std::memory_order_relaxed); }
  // A long-running request (a connect wait) refused because enough of them were already in progress: 503.
  void count_busy_refusal() const noexcept { busy_.fetch_add(1, std::memory_order_relaxed); }

  bool changes_need_token() const noexcept { return !rules_.token.empty(); }
  bool reads_need_token() const noexcept { return changes_need_token() && rules_.reads_need_token; }

  // "refused" by reason (no_token, bad_token, tls, deadline, malformed, busy): daqx_control_refused_total.
  std::vector<Metric> metrics() const;

 private:
  AccessRules rules_;
  mutable std::atomic<std::uint64_t> no_token_{0};
  mutable std::atomic<std::uint64_t> bad_token_{0};
  mutable std::atomic<std::uint64_t> tls_{0};
  mutable std::atomic<std::uint64_t> deadline_{0};
  mutable std::atomic<std::uint64_t> malformed_{0};
  mutable std::atomic<std::uint64_t> busy_{0};
};

// Whether `presented` equals `expected`, in a time that depends only on the length of `expected`: how long a
// comparison takes must not tell a client how many leading bytes it got right.
bool equal_in_constant_time(std::string_view presented, std::string_view expected) noexcept;

}  // namespace daqx::http
