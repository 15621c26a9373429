// Fuzz target: the launcher's ownership check (executive/tools/launch/address_owner.*) on whatever a process
// answering on a context's control URL says to GET /api/executive: any status and body. Properties: nothing throws;
// the launcher's own executive is recognised only from an answer 200 whose identity holds exactly the launcher's
// instance and the context's URL; another process is described in one printable line; an identity read from the
// body has a pid above 0 and an instance that is one or none.
#include <cstdlib>
#include <optional>
#include <string>

#include "address_owner.hpp"
#include "daqx/control/executive_identity.hpp"

namespace {

const std::string kUrl = "http://127.0.0.1:9000";
const std::string kInstance = "5b1e0c2d9a7f4e3b8c6d1a0f2e4b7c9d";

bool one_printable_line(const std::string& text) {
  for (const char c : text)
    if (c < 0x20 || c == 0x7f) return false;
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  // The first byte chooses the status: odd 200, even 0 to 508 (no answer, other answers); the rest is the body.
  daqx::HttpReply reply;
  reply.status = (data[0] & 1) != 0 ? 200 : data[0] * 2;
  reply.connected = true;
  reply.body.assign(reinterpret_cast<const char*>(data + 1), size - 1);

  const std::optional<daqx::ExecutiveIdentity> identity = daqx::parse_executive_identity(reply.body);
  if (identity) {
    if (identity->pid <= 0) std::abort();
    if (!identity->instance.empty() && !daqx::is_launch_instance(identity->instance)) std::abort();
    if (!one_printable_line(identity->describe())) std::abort();
  }
  const daqx::launch::AddressOwner owner = daqx::launch::owner_of(reply, kUrl, kInstance);
  switch (owner.kind) {
    case daqx::launch::AddressOwner::Kind::ours:
      if (reply.status != 200 || !identity || identity->instance != kInstance || identity->context != kUrl) std::abort();
      break;
    case daqx::launch::AddressOwner::Kind::another:
      if (reply.status != 200 || owner.who.empty() || !one_printable_line(owner.who)) std::abort();
      break;
    case daqx::launch::AddressOwner::Kind::nobody:
      if (reply.status == 200) std::abort();  // a 200 is always someone: ours or another
      break;
  }
  return 0;
}
