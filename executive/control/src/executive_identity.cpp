// The launch instance this process runs under and the reading of another process's identity from its answer.
#include "daqx/control/executive_identity.hpp"

#include <Poco/Exception.h>
#include <Poco/JSON/Object.h>
#include <Poco/JSON/Parser.h>

#include <cstdint>
#include <random>
#include <typeinfo>

namespace daqx {
namespace {

std::string& instance_storage() {
  static std::string instance;
  return instance;
}

// One printable line in a message whatever the executive said: other bytes as '?', cut after a name's length.
std::string printable(std::string_view text) {
  constexpr std::size_t kShown = 200;
  std::string out;
  for (const char c : text.substr(0, kShown)) out.push_back(c >= 0x20 && c < 0x7f ? c : '?');
  if (text.size() > kShown) out.append("...");
  return out;
}

}  // namespace

bool is_launch_instance(std::string_view text) noexcept {
  if (text.empty() || text.size() > kMaxLaunchInstance) return false;
  for (const char c : text)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '-')) return false;
  return true;
}

std::string new_launch_instance() {
  std::random_device source;  // the system's random source (getrandom), not a seeded sequence
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string instance;
  for (int word = 0; word < 4; ++word) {
    std::uint32_t bits = source();
    for (int digit = 0; digit < 8; ++digit, bits >>= 4) instance.push_back(kDigits[bits & 0xf]);
  }
  return instance;
}

void set_launch_instance(std::string instance) { instance_storage() = std::move(instance); }
const std::string& launch_instance() noexcept { return instance_storage(); }

std::string ExecutiveIdentity::describe() const {
  std::string text = "daqx-executive pid " + std::to_string(pid);
  if (!partition.empty()) text.append(" of partition '").append(printable(partition)).append("'");
  text.append(instance.empty() ? " (started without a launch instance)" : " (launch instance " + instance + ")");
  return text;
}

std::optional<ExecutiveIdentity> parse_executive_identity(std::string_view body) {
  try {
    Poco::JSON::Parser parser;
    const Poco::Dynamic::Var document = parser.parse(std::string(body));
    if (document.type() != typeid(Poco::JSON::Object::Ptr)) return std::nullopt;
    const Poco::JSON::Object::Ptr object = document.extract<Poco::JSON::Object::Ptr>();
    const Poco::Dynamic::Var pid = object->get("pid");
    if (!pid.isInteger()) return std::nullopt;
    ExecutiveIdentity identity;
    identity.pid = pid.convert<long long>();
    if (identity.pid <= 0) return std::nullopt;
    for (auto [key, field] : {std::pair{"partition", &identity.partition}, std::pair{"context", &identity.context},
                              std::pair{"instance", &identity.instance}}) {
      const Poco::Dynamic::Var value = object->get(key);
      if (value.isEmpty()) continue;  // absent or null
      if (!value.isString()) return std::nullopt;
      *field = value.extract<std::string>();
      // An executive without an instance says null: a string there is an instance, or this is no executive.
      if (field == &identity.instance && !is_launch_instance(identity.instance)) return std::nullopt;
    }
    return identity;
  } catch (const Poco::Exception&) {
    return std::nullopt;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

}  // namespace daqx
