// The shared transport parameters and their checks.
#include "daqx/pt/connection_settings.hpp"

#include <algorithm>
#include <stdexcept>

#include "daqx/services/number_text.hpp"

namespace daqx::pt {
namespace {

// pollTime other than auto: microseconds.
numbers::Parsed<std::uint64_t> poll_microseconds(std::string_view text) {
  return numbers::parse_unsigned(text, 0, 1'000'000);
}

// Checked where the value enters (ParamSpec::check), so a bad pollTime is refused with the partition.
std::string check_poll_time(const ParamSet& params) {
  const std::string& poll = params.string("pollTime");
  if (poll == "auto") return {};
  const numbers::Parsed<std::uint64_t> microseconds = poll_microseconds(poll);
  return microseconds ? std::string() : "pollTime (auto or microseconds from 0 to 1000000): " + microseconds.error;
}

// The receive pool must hold at least one connection's posted buffers.
std::string check_receive_pool(const ParamSet& params) {
  const std::uint64_t pool = params.unsigned_integer("recvPoolSize");
  if (pool >= params.unsigned_integer("recvBufferSize") * params.unsigned_integer("recvDepth")) return {};
  return "parameter recvPoolSize (" + std::to_string(pool) +
         " B) cannot hold recvDepth buffers of recvBufferSize for even one connection";
}

}  // namespace

std::invalid_argument bad_parameter(std::string_view name, std::string_view value, std::string_view expected) {
  std::string text("parameter ");
  text.append(name).append(" is '").append(value).append("': expected ").append(expected);
  return std::invalid_argument(text);
}

std::size_t choice(const ParamSet& params, std::string_view name, std::initializer_list<std::string_view> choices) {
  const std::string& value = params.string(name);
  std::size_t index = 0;
  for (std::string_view candidate : choices) {
    if (value == candidate) return index;
    ++index;
  }
  std::string expected;
  index = 0;
  for (std::string_view candidate : choices) {
    if (index > 0) expected.append(index + 1 == choices.size() ? " or " : ", ");
    expected.append(candidate);
    ++index;
  }
  throw bad_parameter(name, value, expected);
}

std::vector<ParamSpec> concatenate(std::vector<ParamSpec> specs, const std::vector<ParamSpec>& more) {
  specs.insert(specs.end(), more.begin(), more.end());
  return specs;
}

std::vector<ParamSpec> connection_parameter_specs() {
  return {
      {"connectAt", ParamType::string, "start", "",
       "start: connect to every peer as soon as the executive has made its routes, retrying until it listens; "
       "first-use: on the first frame for it or on the connect command", {}, {}, {"start", "first-use"}},
      {"sendQueue", ParamType::unsigned_integer, "4096", "frames",
       "frames queued per connection before post() says would-block", 16, 1 << 20},
      {"reconnectMin", ParamType::unsigned_integer, "50", "ms", "first delay before reconnecting to a peer", 1, 60000},
      {"reconnectMax", ParamType::unsigned_integer, "2000", "ms", "longest delay between reconnection attempts", 1, 600000},
      {"waitMode", ParamType::string, "epoll", "",
       "epoll: the transport's threads sleep on file descriptors when idle; busy: they poll without sleeping", {}, {},
       {"epoll", "busy"}},
      {"pollTime", ParamType::string, "auto", "microseconds",
       "waitMode=epoll: after the last work, poll this long before sleeping (what comes meanwhile costs no "
       "wake-up, the time is spent on a core); auto: up to 50 when every application of the executive handles "
       "its frames inline (each thread halves its window after a longer sleep and doubles it after a shorter "
       "one), else 0", {}, {}, {}, PeerUse::sends_to, check_poll_time},
      {"mode", ParamType::string, "latency", "",
       "latency: send each frame at once; throughput: let frames wait for each other and send them together "
       "(an application's transportMode overrides it frame by frame)", {}, {}, {"latency", "throughput"}},
      {"packSize", ParamType::unsigned_integer, "262144", "bytes",
       "throughput mode: send when this many bytes are queued for a connection (at most a receive buffer's worth "
       "per message)", 4096, 64.0 * 1024 * 1024},
      {"packTimeout", ParamType::unsigned_integer, "200", "microseconds",
       "throughput mode: send at the latest when the oldest queued frame is this old", 1, 1e6},
      {"maxIncoming", ParamType::unsigned_integer, "1024", "connections",
       "incoming connections open at once; one more is refused when it arrives and counted "
       "(connections_over_limit)", 1, 1000000},
  };
}

ConnectionSettings ConnectionSettings::from(const ParamSet& params, std::uint32_t max_frame_size) {
  ConnectionSettings s;
  s.connect_at_start = choice(params, "connectAt", {"start", "first-use"}) == 0;
  s.send_queue = params.unsigned_integer("sendQueue");
  s.max_incoming = params.unsigned_integer("maxIncoming");
  s.reconnect_min = std::chrono::milliseconds(params.unsigned_integer("reconnectMin"));
  s.reconnect_max =
      std::chrono::milliseconds(std::max(params.unsigned_integer("reconnectMax"), params.unsigned_integer("reconnectMin")));
  s.wait_mode = choice(params, "waitMode", {"epoll", "busy"}) == 0 ? WaitMode::epoll : WaitMode::busy;
  s.max_frame_size = max_frame_size;
  const std::string& poll = params.string("pollTime");
  s.automatic_poll_time = poll == "auto";
  if (!s.automatic_poll_time) {
    const numbers::Parsed<std::uint64_t> microseconds = poll_microseconds(poll);
    if (!microseconds) throw bad_parameter("pollTime", poll, "auto or microseconds from 0 to 1000000");
    s.poll_time = std::chrono::microseconds(*microseconds);
  }
  s.throughput_mode = choice(params, "mode", {"latency", "throughput"}) == 1;
  s.pack_bytes = params.unsigned_integer("packSize");
  s.pack_timeout = std::chrono::microseconds(params.unsigned_integer("packTimeout"));
  return s;
}

std::vector<ParamSpec> message_parameter_specs() {
  return {
      {"recvBufferSize", ParamType::unsigned_integer, "131072", "bytes",
       "size of each pre-posted receive buffer; larger frames arrive as chains of such buffers", 4096,
       64.0 * 1024 * 1024},
      {"recvDepth", ParamType::unsigned_integer, "64", "buffers",
       "the most receive buffers one incoming connection keeps posted (its sender's credits); the connections share "
       "the receive budget, a quarter of recvPoolSize, and each gets its part of it up to this", 2, 16384},
      {"recvPoolSize", ParamType::unsigned_integer, "268435456", "bytes",
       "the most memory the receive pool may grow to; a quarter of it is the receive budget the incoming connections "
       "share for posted buffers, the rest holds received frames the applications keep", 1 << 20,
       64.0 * 1024 * 1024 * 1024, {}, PeerUse::sends_to, check_receive_pool},
      {"sendDepth", ParamType::unsigned_integer, "128", "messages",
       "messages in flight per outgoing connection (capped by the device or provider)", 1, 65536},
  };
}

MessageSettings MessageSettings::from(const ParamSet& params) {
  MessageSettings s;
  s.receive_buffer_size = params.unsigned_integer("recvBufferSize");
  s.receive_depth = params.unsigned_integer("recvDepth");
  s.receive_pool_bytes = params.unsigned_integer("recvPoolSize");
  s.send_depth = params.unsigned_integer("sendDepth");
  if (std::string refused = check_receive_pool(params); !refused.empty()) throw std::invalid_argument(refused);
  return s;
}

mem::PoolConfig receive_pool_config(const MessageSettings& settings) {
  // Chunks of 4 MiB (or one buffer), as many as recvPoolSize holds.
  const std::size_t chunk = std::max<std::size_t>(settings.receive_buffer_size, std::size_t{4} << 20);
  mem::PoolConfig receive;
  receive.name = "recv";
  receive.classes.push_back({settings.receive_buffer_size, chunk / settings.receive_buffer_size, 1,
                             std::max<std::size_t>(1, settings.receive_pool_bytes / chunk)});
  return receive;
}

mem::PoolConfig credit_pool_config() {
  mem::PoolConfig credit;
  credit.name = "credit";
  credit.classes.push_back({kCreditBufferSize, 1024, 1, 64});
  return credit;
}

std::size_t small_message_limit(const MessageSettings& settings) {
  return std::clamp(settings.receive_buffer_size / 4, kSmallMessageFloor, kSmallMessageCeiling);
}

mem::PoolConfig small_frame_pool_config(const MessageSettings& settings) {
  mem::PoolConfig small = mem::PoolConfig::geometric("small", 256, small_message_limit(settings), 256 << 10, 16 << 20);
  // A copied frame is one block: the parts of a multipart message (take_parts), or any window an application
  // takes of it, are views of that block.
  small.views = kSmallFrameViews;
  return small;
}

std::size_t message_pool_bytes(const MessageSettings& settings) {
  return receive_pool_config(settings).max_bytes() + credit_pool_config().max_bytes() +
         small_frame_pool_config(settings).max_bytes();
}

}  // namespace daqx::pt
