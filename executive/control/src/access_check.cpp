// The bearer token check of the control port (RFC 6750 header form) and its refusal counters.
#include "access_check.hpp"

#include <cctype>

namespace daqx::http {
namespace {

bool is_blank(char c) { return c == ' ' || c == '\t'; }

// The token of "Bearer <token>" (scheme in any case, RFC 9110 11.1), or nothing when the header is not that form.
std::string_view bearer_token(std::string_view authorization) {
  constexpr std::string_view scheme = "bearer";
  if (authorization.size() <= scheme.size() || !is_blank(authorization[scheme.size()])) return {};
  for (std::size_t i = 0; i < scheme.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(authorization[i])) != scheme[i]) return {};
  std::string_view token = authorization.substr(scheme.size());
  while (!token.empty() && is_blank(token.front())) token.remove_prefix(1);
  while (!token.empty() && is_blank(token.back())) token.remove_suffix(1);
  return token;
}

}  // namespace

bool equal_in_constant_time(std::string_view presented, std::string_view expected) noexcept {
  // Every byte of `expected` is looked at whatever the differences; volatile keeps the compiler from ending the
  // loop at the first one.
  volatile unsigned char difference = presented.size() == expected.size() ? 0 : 1;
  for (std::size_t i = 0; i < expected.size(); ++i) {
    const unsigned char mine = static_cast<unsigned char>(expected[i]);
    const unsigned char theirs = i < presented.size() ? static_cast<unsigned char>(presented[i]) : static_cast<unsigned char>(~mine);
    difference = static_cast<unsigned char>(difference | (mine ^ theirs));
  }
  return difference == 0;
}

Refusal AccessCheck::check(std::string_view method, std::string_view authorization) const {
  if (rules_.token.empty()) return Refusal::none;
  const bool read = method == "GET" || method == "HEAD";
  if (read && !rules_.reads_need_token) return Refusal::none;
  const std::string_view token = bearer_token(authorization);
  if (token.empty()) {
    no_token_.fetch_add(1, std::memory_order_relaxed);
    return Refusal::no_token;
  }
  if (!equal_in_constant_time(token, rules_.token)) {
    bad_token_.fetch_add(1, std::memory_order_relaxed);
    return Refusal::bad_token;
  }
  return Refusal::none;
}

std::vector<Metric> AccessCheck::metrics() const {
  constexpr const char* help =
      "control requests refused: no_token (401), bad_token (403), tls (no TLS handshake), deadline (not whole in "
      "time), malformed (HTTP parser, 400), busy (too many long requests, 503)";
  MetricSink sink;
  sink.counter("refused", static_cast<double>(no_token_.load(std::memory_order_relaxed)), help, {{"reason", "no_token"}});
  sink.counter("refused", static_cast<double>(bad_token_.load(std::memory_order_relaxed)), help, {{"reason", "bad_token"}});
  sink.counter("refused", static_cast<double>(tls_.load(std::memory_order_relaxed)), help, {{"reason", "tls"}});
  sink.counter("refused", static_cast<double>(deadline_.load(std::memory_order_relaxed)), help, {{"reason", "deadline"}});
  sink.counter("refused", static_cast<double>(malformed_.load(std::memory_order_relaxed)), help, {{"reason", "malformed"}});
  sink.counter("refused", static_cast<double>(busy_.load(std::memory_order_relaxed)), help, {{"reason", "busy"}});
  return sink.metrics();
}

}  // namespace daqx::http
