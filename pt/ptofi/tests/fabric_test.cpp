// The provider check: what ptofi needs is found on the host's tcp provider, and a missing provider or
// capability is refused with a message that names it.
#include <catch2/catch.hpp>

#include <string>

#include "fabric.hpp"

using namespace daqx::ptofi;
using Catch::Contains;

TEST_CASE("the tcp provider offers everything ptofi needs", "[ptofi][fabric]") {
  InfoPtr info = find_provider("tcp", "127.0.0.1", "0", FI_SOURCE);
  REQUIRE(info);
  CHECK(info->ep_attr->type == FI_EP_MSG);
  CHECK((info->caps & FI_MSG) != 0);
  CHECK((info->tx_attr->msg_order & FI_ORDER_SAS) != 0);
}

TEST_CASE("a provider this machine does not have is named, with the ones it has", "[ptofi][fabric]") {
  try {
    find_provider("no-such-provider", nullptr, nullptr, 0);
    FAIL("no error");
  } catch (const std::runtime_error& error) {
    CHECK_THAT(error.what(), Contains("no provider 'no-such-provider'"));
    CHECK_THAT(error.what(), Contains("tcp"));
  }
}

TEST_CASE("a provider without reliable connected endpoints is refused for that reason", "[ptofi][fabric]") {
  // udp offers only unreliable datagram endpoints.
  try {
    find_provider("udp", nullptr, nullptr, 0);
    FAIL("no error");
  } catch (const std::runtime_error& error) {
    CHECK_THAT(error.what(), Contains("FI_EP_MSG"));
  }
}
