// Reading ruFailurePolicy.
#include "evm/ru_failure_policy.hpp"

#include <stdexcept>

#include "daqx/apps/text.hpp"

namespace daqx::evb {

RuFailurePolicy parse_ru_failure_policy(const std::string& text) {
  if (text == "fail") return RuFailurePolicy::fail;
  if (text == "incomplete") return RuFailurePolicy::incomplete;
  throw std::runtime_error(apps::concatenate({"ruFailurePolicy: '", text, "' is neither fail nor incomplete"}));
}

}  // namespace daqx::evb
