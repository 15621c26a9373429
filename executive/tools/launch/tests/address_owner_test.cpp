// Who serves a context's control address, as a specification: the launcher's own executive only when it answers
// with the launcher's instance for that very context; any other answer is another process; and, before anything
// starts, a port a process listens on is in use whatever that process says, a closed one is free.
#include <catch2/catch.hpp>

#include "../../../../tests/support/loopback_listener.hpp"
#include "address_owner.hpp"

using daqx::HttpReply;
using daqx::launch::AddressOwner;
using daqx::launch::owner_of;

namespace {

const std::string kUrl = "http://127.0.0.1:9000";
const std::string kInstance = "5b1e0c2d9a7f4e3b8c6d1a0f2e4b7c9d";

HttpReply answer(int status, const std::string& body) { return HttpReply{status, body, false, true}; }
std::string identity(const std::string& context, const std::string& instance) {
  return R"({"partition": "p", "context": ")" + context + R"(", "pid": 4242, "instance": )" +
         (instance.empty() ? std::string("null") : "\"" + instance + "\"") + "}";
}

}  // namespace

TEST_CASE("the launcher's own executive is the one answering with its instance for that context", "[ownership]") {
  CHECK(owner_of(answer(200, identity(kUrl, kInstance)), kUrl, kInstance).kind == AddressOwner::Kind::ours);
}

TEST_CASE("an executive answering with another instance, none, or for another context is another process",
          "[ownership]") {
  const AddressOwner other = owner_of(answer(200, identity(kUrl, "someone-else")), kUrl, kInstance);
  CHECK(other.kind == AddressOwner::Kind::another);
  CHECK(other.who == "daqx-executive pid 4242 of partition 'p' (launch instance someone-else)");
  CHECK(owner_of(answer(200, identity(kUrl, "")), kUrl, kInstance).kind == AddressOwner::Kind::another);
  CHECK(owner_of(answer(200, identity("http://127.0.0.1:9001", kInstance)), kUrl, kInstance).kind ==
        AddressOwner::Kind::another);
  // A launcher that has no instance owns nothing, not even an executive started without one.
  CHECK(owner_of(answer(200, identity(kUrl, "")), kUrl, "").kind == AddressOwner::Kind::another);
  const AddressOwner not_daqx = owner_of(answer(200, "<html>hello</html>"), kUrl, kInstance);
  CHECK(not_daqx.kind == AddressOwner::Kind::another);
  CHECK(not_daqx.who == "a process that answers GET /api/executive, but not as a daqx executive");
}

TEST_CASE("no answer, or one that is not 200, says nobody is known there yet", "[ownership]") {
  CHECK(owner_of(HttpReply{0, "Connection refused"}, kUrl, kInstance).kind == AddressOwner::Kind::nobody);
  CHECK(owner_of(HttpReply{0, "no answer within 1 s", true, true}, kUrl, kInstance).kind == AddressOwner::Kind::nobody);
  CHECK(owner_of(answer(401, R"({"error": "token"})"), kUrl, kInstance).kind == AddressOwner::Kind::nobody);
}

TEST_CASE("before anything starts, a port a process listens on is in use though it says nothing, a closed port is "
          "free", "[ownership]") {
  const daqx::test::LoopbackListener held;
  daqx::test::LoopbackListener freed;
  freed.close();
  const std::string held_url = "http://127.0.0.1:" + std::to_string(held.port());
  const std::string freed_url = "http://127.0.0.1:" + std::to_string(freed.port());
  daqx::ControlRequestPool pool(8, 2);
  const auto in_use = daqx::launch::addresses_in_use({freed_url, held_url}, pool, std::chrono::milliseconds(500));
  REQUIRE(in_use.size() == 1);
  CHECK(in_use[0].url == held_url);
  CHECK(in_use[0].by == "a process that takes the connection and does not answer as a daqx executive");
}
