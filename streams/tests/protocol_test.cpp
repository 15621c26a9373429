// The policy's text form and the stream messages: what is valid reads back the same, anything else is refused with
// its reason.
#include <catch2/catch.hpp>

#include <cstring>
#include <vector>

#include "daqx/streams/policy.hpp"
#include "daqx/streams/protocol.hpp"

using namespace daqx::streams;

TEST_CASE("every policy's text reads back as the policy it names", "[streams]") {
  struct Case {
    const char* text;
    PolicyKind kind;
    std::uint32_t every;
    double rate;
    std::uint32_t depth;
  };
  for (const Case& c : std::vector<Case>{{"block", PolicyKind::block, 1, 0, kDefaultDepth},
                                         {"block,depth:256", PolicyKind::block, 1, 0, 256},
                                         {"drop-newest", PolicyKind::drop_newest, 1, 0, kDefaultDepth},
                                         {"drop-oldest,depth:1", PolicyKind::drop_oldest, 1, 0, 1},
                                         {"keep-last,depth:4096", PolicyKind::keep_last, 1, 0, 4096},
                                         {"sample:100", PolicyKind::sample, 100, 0, kDefaultDepth},
                                         {"rate:2.5", PolicyKind::sample, 1, 2.5, kDefaultDepth},
                                         {"sample:10/rate:2,depth:4", PolicyKind::sample, 10, 2, 4}}) {
    INFO(c.text);
    const ParsedPolicy parsed = parse_policy(c.text);
    REQUIRE(parsed.policy);
    CHECK(parsed.error.empty());
    CHECK(parsed.policy->kind == c.kind);
    CHECK(parsed.policy->every == c.every);
    CHECK(parsed.policy->max_rate == c.rate);
    CHECK(parsed.policy->depth == c.depth);
    CHECK(parse_policy(to_string(*parsed.policy)).policy == parsed.policy);
  }
}

TEST_CASE("a policy that is not one is refused with its reason", "[streams]") {
  for (const char* text : {"", "blocks", "block,", "block,depth:0", "block,depth:4097", "block,depth:0x10",
                           "block,size:3", "sample:", "sample:0", "sample: 5", "sample:5/", "sample:5/sample:6",
                           "rate:0", "rate:inf", "rate:1e7", "rate:nan", "sample:1x", "Block", "drop_newest",
                           "keep-last,depth:1,depth:2"}) {
    INFO(text);
    const ParsedPolicy parsed = parse_policy(text);
    CHECK_FALSE(parsed.policy);
    CHECK(parsed.error.rfind("policy '", 0) == 0);
  }
  CHECK(parse_policy(std::string("block\0x", 7)).error.find("\\x00") != std::string::npos);  // one printable line
}

TEST_CASE("stream names are 1 to 64 of A-Z a-z 0-9 . _ -", "[streams]") {
  CHECK(check_stream_name("events").empty());
  CHECK(check_stream_name("dqm.run-2_A").empty());
  CHECK(check_stream_name(std::string(64, 'a')).empty());
  CHECK_FALSE(check_stream_name("").empty());
  CHECK_FALSE(check_stream_name(std::string(65, 'a')).empty());
  CHECK_FALSE(check_stream_name("a b").empty());
  CHECK_FALSE(check_stream_name("a/b").empty());
}

TEST_CASE("stream messages read back as written, and damaged ones are refused", "[streams]") {
  ControlMessage subscribe;
  subscribe.kind = ControlKind::subscribe;
  subscribe.policy = *parse_policy("sample:7/rate:3,depth:9").policy;
  subscribe.stream = "events";
  std::vector<std::byte> bytes(control_bytes(subscribe));
  encode(subscribe, bytes.data());
  Parsed<ControlMessage> back = parse_control(bytes);
  REQUIRE(back.message);
  CHECK(back.message->policy == subscribe.policy);
  CHECK(back.message->stream == "events");

  CHECK_FALSE(parse_control(std::span(bytes).first(bytes.size() - 1)).message);  // the name cut short
  std::vector<std::byte> bad = bytes;
  bad[1] = std::byte{9};  // no such policy kind
  CHECK(parse_control(bad).error.find("policy") != std::string::npos);
  bad = bytes;
  bad[8] = std::byte{0};  // depth 0
  bad[9] = std::byte{0};
  CHECK_FALSE(parse_control(bad).message);
  bad = bytes;
  bad[kControlBytes] = std::byte{'/'};  // not a stream name
  CHECK_FALSE(parse_control(bad).message);
  bad = bytes;
  bad[0] = std::byte{7};
  CHECK(parse_control(bad).error.find("unknown") != std::string::npos);

  ControlMessage ack;
  ack.kind = ControlKind::acknowledge;
  ack.subscription = 5;
  ack.sequence = 77;
  std::vector<std::byte> ack_bytes(control_bytes(ack));
  encode(ack, ack_bytes.data());
  REQUIRE(parse_control(ack_bytes).message);
  CHECK(parse_control(ack_bytes).message->sequence == 77);
  ack_bytes.push_back(std::byte{'x'});  // an acknowledgement carries no name
  CHECK_FALSE(parse_control(ack_bytes).message);

  ReplyMessage refused{ReplyKind::refused, 0, std::string(1000, 'r')};
  std::vector<std::byte> reply(reply_bytes(refused));
  encode(refused, reply.data());
  REQUIRE(parse_reply(reply).message);
  CHECK(parse_reply(reply).message->reason.size() == kMaxReason);  // cut to what the format carries
  reply.pop_back();
  CHECK_FALSE(parse_reply(reply).message);

  std::vector<std::byte> data(kDataHeaderBytes);
  encode(DataHeader{1, 2, 3, 4}, data.data());
  REQUIRE(parse_data(data).message);
  CHECK(parse_data(data).message->dropped == 4);
  CHECK_FALSE(parse_data(std::span(data).first(31)).message);
}
