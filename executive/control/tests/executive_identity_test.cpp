// Which process answers on a control URL, as a specification: GET /api/executive's identity fields read back
// exactly, anything else (not JSON, no pid, fields of the wrong type, an instance with characters an instance
// never has) read as no identity; launch instances as the launcher makes them and the executive takes them.
#include <catch2/catch.hpp>

#include <set>

#include "daqx/control/executive_identity.hpp"

using daqx::ExecutiveIdentity;
using daqx::is_launch_instance;
using daqx::parse_executive_identity;

TEST_CASE("an executive's identity is read from its GET /api/executive answer: partition, context, pid and launch "
          "instance", "[identity]") {
  const auto identity = parse_executive_identity(
      R"({"partition": "evb", "context": "http://127.0.0.1:9000", "pid": 4242, "instance": "3f2a-b", "run": 5})");
  REQUIRE(identity);
  CHECK(identity->partition == "evb");
  CHECK(identity->context == "http://127.0.0.1:9000");
  CHECK(identity->pid == 4242);
  CHECK(identity->instance == "3f2a-b");
  CHECK(identity->describe() == "daqx-executive pid 4242 of partition 'evb' (launch instance 3f2a-b)");
}

TEST_CASE("an executive started without a launch instance answers null or nothing, and says so in messages",
          "[identity]") {
  for (const char* body : {R"({"partition": "p", "context": "http://h:1", "pid": 7, "instance": null})",
                           R"({"partition": "p", "context": "http://h:1", "pid": 7})"}) {
    const auto identity = parse_executive_identity(body);
    REQUIRE(identity);
    CHECK(identity->instance.empty());
    CHECK(identity->describe() == "daqx-executive pid 7 of partition 'p' (started without a launch instance)");
  }
}

TEST_CASE("an answer that is not an executive's identity is read as none, whatever its bytes", "[identity]") {
  for (const char* body : {"", "not json", "[1, 2]", "42", R"("pid")", R"({})", R"({"partition": "p"})",
                           R"({"pid": "4242"})", R"({"pid": 0})", R"({"pid": -3})", R"({"pid": 1.5})",
                           R"({"pid": 99999999999999999999999})", R"({"pid": 4, "instance": 12})",
                           R"({"pid": 4, "context": ["http://h:1"]})", R"({"pid": 4, "instance": "has space"})",
                           R"({"pid": 4, "instance": ""})", R"({"pid": 4, "instance": "a\u0000b"})",
                           R"({"pid": 4, "instance": "é"})", R"({"pid": 4)"}) {
    INFO(body);
    CHECK_FALSE(parse_executive_identity(body));
  }
  const std::string too_long(daqx::kMaxLaunchInstance + 1, 'a');
  CHECK_FALSE(parse_executive_identity(R"({"pid": 4, "instance": ")" + too_long + R"("})"));
}

TEST_CASE("what another executive says of itself is shown as one printable line", "[identity]") {
  const auto identity = parse_executive_identity(R"({"partition": "a\nb\u001b[31m", "pid": 9})");
  REQUIRE(identity);
  const std::string shown = identity->describe();
  CHECK(shown == "daqx-executive pid 9 of partition 'a?b?[31m' (started without a launch instance)");
}

TEST_CASE("launch instances: 1 to 64 of 0-9, a-z, A-Z and '-', a new one for every launch", "[identity]") {
  CHECK(is_launch_instance("a"));
  CHECK(is_launch_instance("Run-2026-11-27"));
  CHECK(is_launch_instance(std::string(daqx::kMaxLaunchInstance, 'f')));
  CHECK_FALSE(is_launch_instance(""));
  CHECK_FALSE(is_launch_instance(std::string(daqx::kMaxLaunchInstance + 1, 'f')));
  for (const char* bad : {"a b", "a_b", "a.b", "a/b", "a\nb", "ä"}) CHECK_FALSE(is_launch_instance(bad));
  std::set<std::string> made;
  for (int i = 0; i < 100; ++i) {
    const std::string instance = daqx::new_launch_instance();
    CHECK(instance.size() == 32);
    CHECK(is_launch_instance(instance));
    made.insert(instance);
  }
  CHECK(made.size() == 100);
}
