#include "address_owner.hpp"

#include <optional>

#include "daqx/control/executive_identity.hpp"

namespace daqx::launch {
namespace {

std::string described(const std::optional<ExecutiveIdentity>& identity) {
  return identity ? identity->describe() : "a process that answers GET /api/executive, but not as a daqx executive";
}

}  // namespace

AddressOwner owner_of(const HttpReply& reply, const std::string& url, const std::string& instance) {
  if (reply.status != 200) return {};
  const std::optional<ExecutiveIdentity> identity = parse_executive_identity(reply.body);
  if (identity && !instance.empty() && identity->instance == instance && identity->context == url)
    return {AddressOwner::Kind::ours, {}};
  return {AddressOwner::Kind::another, described(identity)};
}

std::vector<AddressInUse> addresses_in_use(const std::vector<std::string>& urls, ControlRequestPool& pool,
                                           std::chrono::milliseconds deadline) {
  std::vector<ControlRequest> requests;
  for (const std::string& url : urls) requests.push_back({url, "GET", "/api/executive", "", deadline});
  std::vector<std::optional<std::string>> by(urls.size());  // written by the pool's threads, one slot each
  pool.run(requests, [&](std::size_t i, HttpReply reply) {
    if (reply.status == 200)
      by[i] = described(parse_executive_identity(reply.body));
    else if (reply.answered())
      by[i] = "a process that answers HTTP " + std::to_string(reply.status);
    else if (reply.connected)
      by[i] = "a process that takes the connection and does not answer as a daqx executive";
  });
  std::vector<AddressInUse> in_use;
  for (std::size_t i = 0; i < urls.size(); ++i)
    if (by[i]) in_use.push_back({urls[i], *by[i]});
  return in_use;
}

}  // namespace daqx::launch
