// The parameters every connection-oriented transport shares, declared once (one name, one default, one
// help text), and the settings read from them. A transport appends its own parameters to these.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "daqx/api/frame.hpp"
#include "daqx/api/parameters.hpp"
#include "daqx/mempool/pool.hpp"

namespace daqx::pt {

// How completion threads wait for work: asleep on file descriptors (epoll), or polling without sleeping.
enum class WaitMode { epoll, busy };

// pollTime=auto: what a transport thread polls before sleeping when no dispatch thread competes for cores.
inline constexpr std::chrono::microseconds kAutomaticPollTime{50};

// What every transport made of connections needs: when to connect, how much to queue, how to retry, how
// to wait.
struct ConnectionSettings {
  bool connect_at_start = true;             // else on the first frame (or the connect command)
  std::size_t send_queue = 4096;            // frames queued per connection before post() says would_block
  std::chrono::milliseconds reconnect_min{50};
  std::chrono::milliseconds reconnect_max{2000};
  WaitMode wait_mode = WaitMode::epoll;
  // epoll mode: poll this long after the last work before sleeping; automatic: up to kAutomaticPollTime when
  // every application dispatches inline (no dispatch thread to starve), as each thread's PollWindow finds
  // worth it, else not at all.
  std::chrono::microseconds poll_time{0};
  bool automatic_poll_time = true;
  std::uint32_t max_frame_size = kDefaultMaxFrameSize;
  // Incoming connections open at once: one more is refused as soon as it arrives (and counted), before anything
  // is made for it, so any number of peers costs a bounded number of connections' buffers.
  std::size_t max_incoming = 1024;
  // Coalescing: in throughput mode frames wait for each other, to go many to a message or write, until
  // pack_bytes are queued or the oldest has waited pack_timeout. A frame's header flags override the mode.
  bool throughput_mode = false;
  std::size_t pack_bytes = 256 * 1024;
  std::chrono::microseconds pack_timeout{200};

  // Throws std::invalid_argument naming the parameter and what it expected.
  static ConnectionSettings from(const ParamSet& params, std::uint32_t max_frame_size);
};

// connectAt, sendQueue, reconnectMin, reconnectMax, waitMode, pollTime, mode, packSize, packTimeout, maxIncoming.
std::vector<ParamSpec> connection_parameter_specs();

// What transports that carry frames as messages into pre-posted receive buffers share (ptofi, ptibv).
struct MessageSettings {
  std::size_t receive_buffer_size = 128 * 1024;  // each posted receive buffer: the largest message
  std::size_t receive_depth = 64;                // buffers kept posted per incoming connection (its sender's credits)
  std::size_t receive_pool_bytes = std::size_t{256} << 20;
  std::size_t send_depth = 128;                  // messages in flight per outgoing connection

  static MessageSettings from(const ParamSet& params);
};

// Credit messages (ptofi, ptibv): a few bytes each, from a pool of their own.
inline constexpr std::size_t kCreditBufferSize = 64;
// A message of at most small_message_limit bytes has its frames copied out of its receive buffer into the
// small-frame pool, and the buffer goes back at once (MessageTransport::prepare_incoming). Control frames, and the
// super-fragments a BU keeps until their events are whole, then hold memory in proportion to their size instead
// of a whole receive buffer each (at 128 RUs a BU's super-fragments are about 16 KiB: a 2 MiB batch over the RUs);
// fuller messages (a sender streaming, large frames) stay zero copy.
inline constexpr std::size_t kSmallMessageFloor = 4096;
inline constexpr std::size_t kSmallMessageCeiling = 32768;  // bounds the copy one message costs
std::size_t small_message_limit(const MessageSettings& settings);  // recvBufferSize / 4, from 4 to 32 KiB
inline constexpr std::size_t kSmallFrameViews = 16384;  // views of the copies (the parts of multipart messages)

// The pools of a message transport, made from these settings at configure and counted by its capabilities.
mem::PoolConfig receive_pool_config(const MessageSettings& settings);  // "recv": recvBufferSize blocks up to recvPoolSize
mem::PoolConfig credit_pool_config();                                 // "credit"
mem::PoolConfig small_frame_pool_config(const MessageSettings& settings);  // "small": up to small_message_limit
// What the three grow to at most.
std::size_t message_pool_bytes(const MessageSettings& settings);

// The threads of a ConnectionTransport (pt/base): one that sends, one that receives, for every connection.
inline constexpr std::size_t kConnectionTransportThreads = 2;

// recvBufferSize, recvDepth, recvPoolSize, sendDepth.
std::vector<ParamSpec> message_parameter_specs();

// Appends the specs of `more` to `specs` (a transport's own after the shared ones).
std::vector<ParamSpec> concatenate(std::vector<ParamSpec> specs, const std::vector<ParamSpec>& more);

// A string parameter that must be one of `choices`; returns its index in them. Throws
// std::invalid_argument("parameter NAME is 'VALUE': expected a, b or c") otherwise.
std::size_t choice(const ParamSet& params, std::string_view name, std::initializer_list<std::string_view> choices);

// The error every settings check throws: "parameter NAME is 'VALUE': expected EXPECTED".
std::invalid_argument bad_parameter(std::string_view name, std::string_view value, std::string_view expected);

}  // namespace daqx::pt
