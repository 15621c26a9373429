// ptibv's wire protocol without a device: private data round trips and refusals, and a simulation of
// the two credit streams that checks neither side can ever meet a peer without a posted buffer and that
// traffic never stops while the sender has frames.
#include <catch2/catch.hpp>

#include <cstring>
#include <deque>
#include <random>
#include <vector>

#include "daqx/pt/credit_flow.hpp"
#include "wire.hpp"

using namespace daqx;
using namespace daqx::ptibv;

TEST_CASE("connection request and reply survive encoding, also when the CM pads them", "[ptibv][wire]") {
  std::byte padded[56]{};
  encode_request({8}, padded);
  ConnectRequest request;
  CHECK(decode_request(padded, sizeof padded, request).empty());
  CHECK(request.credit_buffers == 8);

  std::byte reply_bytes[196]{};
  encode_reply({131072, 64}, reply_bytes);
  ConnectReply reply;
  CHECK(decode_reply(reply_bytes, sizeof reply_bytes, reply).empty());
  CHECK(reply.buffer_size == 131072);
  CHECK(reply.posted_total == 64);
}

TEST_CASE("private data that is not a ptibv request is refused with the reason", "[ptibv][wire]") {
  ConnectRequest request;
  CHECK_THAT(decode_request(nullptr, 0, request), Catch::Contains("too short"));
  std::byte garbage[16];
  for (int i = 0; i < 16; ++i) garbage[i] = static_cast<std::byte>(i * 37 + 11);
  CHECK_THAT(decode_request(garbage, sizeof garbage, request), Catch::Contains("not a daqx connection request"));
  std::byte reply[kConnectReplySize];
  encode_reply({4096, 1}, reply);
  CHECK_THAT(decode_request(reply, sizeof reply, request), Catch::Contains("not a daqx connection request"));
  std::byte other_version[kConnectRequestSize];
  encode_request({8}, other_version);
  other_version[4] = std::byte{99};
  CHECK_THAT(decode_request(other_version, sizeof other_version, request), Catch::Contains("wire version 99"));
  std::byte no_buffers[kConnectRequestSize];
  encode_request({0}, no_buffers);
  CHECK_THAT(decode_request(no_buffers, sizeof no_buffers, request), Catch::Contains("no buffers for credit messages"));
  ConnectReply answer;
  std::byte zero_size[kConnectReplySize];
  encode_reply({0, 5}, zero_size);
  CHECK_THAT(decode_reply(zero_size, sizeof zero_size, answer), Catch::Contains("buffer size of 0"));
}

TEST_CASE("the credit-message allowance follows the sender's totals and never goes negative", "[ptibv][wire]") {
  CreditMessageAllowance small;
  small.start(2);
  small.sent();
  small.sent();
  CHECK(small.available() == 0);
  small.update(3);
  CHECK(small.available() == 1);
  small.update(1);  // older than what was sent: nothing, not four billion
  CHECK(small.available() == 0);
  small.update(10);
  CHECK(small.available() == 8);
}

namespace {

// Both ends of one connection as ptibv runs them, with messages in flight as queues and an adversary
// choosing what happens next.
struct Simulation {
  explicit Simulation(std::uint32_t buffers_for_credits, std::uint64_t receive_depth)
      : receiver_credits(std::max<std::uint64_t>(1, receive_depth / 4)) {
    allowance.start(buffers_for_credits);
    credit_buffers_posted = buffers_for_credits;
    credit_buffers_free = buffers_for_credits;
    receiver_credits.posted(receive_depth);
    receiver_buffers_free = receive_depth;
    send_credits.grant({4096, receiver_credits.report()});  // the reply
  }

  pt::ReceiveCredits receiver_credits;
  CreditMessageAllowance allowance;
  pt::SendCredits send_credits;
  std::uint32_t credit_buffers_posted = 0;  // the sender's total, each data message's immediate value
  std::uint64_t credit_buffers_free = 0;    // posted and not yet filled
  std::uint64_t receiver_buffers_free = 0;  // posted and not yet filled
  std::uint64_t receiver_held = 0;          // delivered, not yet released by the application
  std::deque<std::uint32_t> data_in_flight;         // immediate values
  std::deque<std::uint64_t> credits_in_flight;      // posted totals
  std::deque<std::uint64_t> credits_arrived;        // in the sender's CQ, not yet handled
  std::uint64_t frames_left = 0;
  std::uint64_t delivered = 0;

  bool sender_sends() {
    if (frames_left == 0 || send_credits.available() == 0) return false;
    send_credits.consume();
    data_in_flight.push_back(credit_buffers_posted);
    --frames_left;
    return true;
  }
  bool data_lands() {
    if (data_in_flight.empty()) return false;
    REQUIRE(receiver_buffers_free > 0);  // never receiver-not-ready
    --receiver_buffers_free;
    receiver_credits.received();
    allowance.update(data_in_flight.front());
    data_in_flight.pop_front();
    ++receiver_held;
    ++delivered;
    return true;
  }
  bool application_releases() {
    if (receiver_held == 0) return false;
    --receiver_held;
    ++receiver_buffers_free;  // ptibv re-posts a fresh buffer
    receiver_credits.posted();
    return true;
  }
  bool receiver_reports() {
    if (!receiver_credits.report_due() || allowance.available() == 0) return false;
    allowance.sent();
    credits_in_flight.push_back(receiver_credits.report());
    return true;
  }
  bool credit_lands() {
    if (credits_in_flight.empty()) return false;
    REQUIRE(credit_buffers_free > 0);  // never receiver-not-ready on the way back either
    --credit_buffers_free;
    credits_arrived.push_back(credits_in_flight.front());
    credits_in_flight.pop_front();
    return true;
  }
  bool sender_handles_credit() {
    if (credits_arrived.empty()) return false;
    ++credit_buffers_free;  // re-posted first
    ++credit_buffers_posted;
    send_credits.grant({4096, credits_arrived.front()});
    credits_arrived.pop_front();
    return true;
  }
};

}  // namespace

TEST_CASE("credits in both directions: no message meets a missing buffer and traffic never stalls", "[ptibv][wire]") {
  for (std::uint32_t sender_buffers : {1u, 2u, 8u}) {
    for (std::uint64_t depth : {2u, 3u, 16u, 64u}) {
      for (unsigned seed = 1; seed <= 20; ++seed) {
        Simulation sim(sender_buffers, depth);
        sim.frames_left = 2000;
        std::mt19937 random(seed);
        std::uint64_t steps = 0;
        while (sim.delivered < 2000) {
          // The adversary picks any step that can happen; when none can, the protocol is stuck.
          bool (Simulation::*steps_available[])() = {&Simulation::sender_sends, &Simulation::data_lands,
                                                       &Simulation::application_releases, &Simulation::receiver_reports,
                                                       &Simulation::credit_lands, &Simulation::sender_handles_credit};
          bool moved = false;
          std::size_t first = random() % 6;
          for (std::size_t i = 0; i < 6 && !moved; ++i) moved = (sim.*steps_available[(first + i) % 6])();
          INFO("sender buffers " << sender_buffers << ", depth " << depth << ", seed " << seed << ", delivered "
                                 << sim.delivered);
          REQUIRE(moved);
          REQUIRE(++steps < 1000000);
        }
      }
    }
  }
}
