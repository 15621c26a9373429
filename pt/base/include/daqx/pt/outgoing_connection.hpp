// One outgoing connection as the shared layer keeps it: the state machine (idle, connecting, up, down),
// the queue of frames waiting for the wire, backoff, a timer, and its counters. A transport derives from
// it to add what its wire needs (a socket, an endpoint, a queue pair).
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <mutex>
#include <string>

#include "daqx/api/transport.hpp"
#include "daqx/mempool/ref_ring.hpp"
#include "daqx/pt/transport_counters.hpp"

namespace daqx::pt {

struct OutgoingConnection {
  enum class State { idle, connecting, up, down };
  using Clock = std::chrono::steady_clock;

  explicit OutgoingConnection(std::size_t queue_capacity) : queue(queue_capacity) {}
  virtual ~OutgoingConnection() = default;
  OutgoingConnection(const OutgoingConnection&) = delete;
  OutgoingConnection& operator=(const OutgoingConnection&) = delete;

  PeerId id = 0;
  EndpointAddress remote;

  // Posting threads and the send thread; held for one queue update or one post to the wire, never across
  // a wait.
  mutable std::mutex mutex;
  State state = State::idle;
  bool ever_up = false;
  bool connect_requested = false;  // the send thread opens it (first use, the connect command)
  std::string failure;             // a poster's post to the wire failed: the send thread tears down

  mem::RefRing queue;              // frames not yet on the wire whole; the first may be partly
  std::size_t queued_bytes = 0;
  bool flush_now = false;          // send what is queued without waiting for more (a latency frame, the pack
                                   // timer); the wire clears it once everything queued is sent

  Clock::time_point retry_at;
  std::chrono::milliseconds backoff{0};
  bool timer_armed = false;        // the transport's timer for this connection (e.g. a pack timeout)
  Clock::time_point timer_due;

  std::atomic<bool> want_ready{false};  // a poster got would_block: tell it when there is room
  std::atomic<bool> attention_asked{false};  // on the send thread's list of connections to look at
  Clock::time_point scheduled = Clock::time_point::max();  // send thread: its earliest entry in the due list
  OutgoingCounters counters;

  // What to tell the executive once the lock is released (ConnectionTransport::with_lock).
  bool came_up = false;
  bool went_down = false;
  std::string down_reason;

  void push(mem::Ref&& frame) noexcept {
    queued_bytes += frame.total_size();
    queue.push(std::move(frame));
  }
  // The first frame, taken out (its blocks travel on) or dropped (its blocks go back).
  mem::Ref take_front() noexcept {
    queued_bytes -= queue.front().total_size();
    return queue.take_front();
  }
  void pop_front() noexcept {
    queued_bytes -= queue.front().total_size();
    queue.pop();
  }
  void arm_timer(Clock::time_point due) noexcept {
    if (timer_armed && timer_due <= due) return;
    timer_armed = true;
    timer_due = due;
  }
};

}  // namespace daqx::pt
