// The part of the connection layer that transports sending messages into pre-posted receive buffers share
// (ptofi, ptibv): credit-paced sending straight from pool blocks, small frames packed into one message
// (coalescing), messages in flight retired in order, receive buffers kept posted per connection, credit
// messages back to the sender, and messages split and chained into frames on arrival without a copy. The wire
// says how to post one message, one receive buffer and one credit message.
//
// A connection carries frames one way: the side that connected (the sender) posts data messages, the side
// that accepted (the receiver) posts only credit messages back (credit_flow.hpp).
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

#include "daqx/pt/connection_transport.hpp"
#include "daqx/pt/credit_flow.hpp"
#include "daqx/pt/frame_assembler.hpp"
#include "daqx/pt/message_cutter.hpp"
#include "daqx/pt/send_ring.hpp"

namespace daqx::pt {

// One wire connection's life on an outgoing connection (an endpoint, a queue pair): a reconnection makes a
// new one. The wire derives from it.
struct SendLink {
  virtual ~SendLink() = default;
  bool connected = false;
  bool closed = false;
  SendCredits credits;
  SendRing ring;  // messages in flight
};

struct MessageOutgoing : OutgoingConnection {
  using OutgoingConnection::OutgoingConnection;
  SendLink* link = nullptr;         // the current wire connection, owned by the transport
  // Frames stay in the queue until every message carrying a byte of them is known sent: those before
  // cursor.frame are all in messages, the others wait.
  SendCursor cursor;
  std::size_t bytes_in_messages = 0;  // bytes of the queue's frames already in messages
  bool waiting_for_credits = false;
};

struct MessageIncoming : IncomingConnection {
  // credit_threshold: report posted buffers to the sender at the latest when this many are new.
  MessageIncoming(std::size_t credit_threshold, std::uint32_t max_frame_size)
      : credits(credit_threshold), assembler(max_frame_size) {}
  ReceiveCredits credits;
  std::uint64_t posted = 0;     // receive buffers posted for this connection in total
  bool waiting_for_pool = false;  // for receive buffers, or for views to hand frames out as
  std::uint64_t held = 0;       // buffers it holds (posted - consumed) as last counted in the receive budget
  FrameAssembler assembler;     // messages that arrived, until their frames are taken
  // Messages whose every frame was handed on: their buffers may be replaced by new ones.
  std::uint64_t consumed() const noexcept { return assembler.messages_done(); }
};

class MessageTransport : public ConnectionTransport {
 protected:
  // As ConnectionTransport; the message parameters are read from host.params() too.
  MessageTransport(TransportHost& host, Describe describe);

  const MessageSettings& message_settings() const noexcept { return messages_; }
  // What the device or provider allows, set when it is opened.
  void set_limits(std::size_t gather_limit, std::size_t send_depth, std::size_t receive_depth) noexcept;
  std::size_t gather_limit() const noexcept { return gather_limit_; }
  std::size_t send_depth() const noexcept { return send_depth_; }
  std::size_t receive_depth() const noexcept { return receive_depth_; }
  // The receive pool's views, one per frame handed out of a buffer that holds several (PoolConfig::views).
  std::size_t views_needed() const noexcept;

  // ---- Receive memory, shared by every incoming connection ------------------------------------------------
  // The receive buffers all incoming connections together hold: a quarter of the receive pool (the rest holds the
  // frames applications keep, zero copy: a BU's slots may hold half of it by default), less where the wire caps
  // it (a shared receive queue, the completion queue). A connection's share is that divided among the connections the partition's plan sends here
  // or that are open, if more, at most recvDepth: memory per context does not grow with its peers. Every
  // connection keeps at least one buffer posted, whatever the others hold, so no sender is left without credit;
  // a connection beyond as many as the budget has buffers for is refused (incoming_capacity).
  std::size_t receive_budget() const noexcept { return receive_budget_; }
  void cap_receive_budget(std::size_t buffers) noexcept;
  // The buffers one incoming connection keeps posted now.
  std::size_t connection_depth() const noexcept;
  // Accept time, before any buffer is posted: sets up what every incoming connection shares (small frames
  // copied out of receive buffers into the small-frame pool).
  void prepare_incoming(MessageIncoming& c) noexcept;
  std::pair<std::size_t, std::string> incoming_capacity() const override;
  // The receive budget and its use; a wire that reports more calls this first.
  void report_wire(MetricSink& sink) const override;

  // ---- Sending: the wire's part ------------------------------------------------------------------------
  struct Message {
    const MessagePieces& pieces;
    std::size_t slot;   // its place in link.ring (for the completion to name)
    bool last_queued;   // nothing more is queued behind it: ask for its completion, or blocks stay held
  };
  enum class Posted {
    ok,     // on the wire
    again,  // no room now: the send thread will call pump() again
    failed  // c.failure says why: the send thread tears the connection down
  };
  // Under c.mutex: posts one message on link.
  virtual Posted post_message(MessageOutgoing& c, SendLink& link, const Message& message) noexcept = 0;

  // pump(): as many messages as credits, the ring and the wire allow, packing frames into each.
  void pump(OutgoingConnection& c) noexcept final;
  // Helpers for completions, under c.mutex: messages known sent (retired in order, their frames counted and
  // released, then pumped on), and credits granted by the receiver.
  void message_sent(MessageOutgoing& c, SendLink& link, std::size_t slot);
  void messages_sent_through(MessageOutgoing& c, SendLink& link, std::size_t slot);
  void credits_granted(MessageOutgoing& c, SendLink& link, const CreditMessage& message);
  // For close_link(): forgets the link's credits, messages in flight and cursor. The frames they carried are
  // still in the queue, which teardown releases and counts.
  void release_link(MessageOutgoing& c, SendLink& link) noexcept;
  void outgoing_metrics(const OutgoingConnection& c, std::vector<Metric>& metrics) const override;

  // ---- Receiving: the wire's part ----------------------------------------------------------------------
  enum class Post {
    posted,     // done
    no_memory,  // the receive pool is empty: wait for it (counted in receive_pool_waits)
    no_room,    // the wire has no room now; something that completes will make some
    again,      // no room now: try again on the receive thread's next round
    failed      // the connection must close (error says why)
  };
  // Receive thread: posts one receive buffer for c (from the receive pool, or one left spare).
  virtual Post post_receive_buffer(MessageIncoming& c, std::string& error) = 0;
  // Receive thread: sends one credit message on c, or says why not.
  virtual Post post_credits(MessageIncoming& c, const CreditMessage& message, std::string& error) = 0;
  // Receive thread: releases what the wire holds for c (its posted buffers); after close_incoming().
  virtual void close_receive_link(MessageIncoming& c) noexcept = 0;

  // Receive thread: a message arrived on c (in order): splits and chains it into frames and delivers them,
  // then keeps c's buffers posted and its sender's credits told.
  void message_arrived(MessageIncoming& c, mem::Ref&& buffer, std::size_t length);
  void replenish(MessageIncoming& c);
  void send_credits(MessageIncoming& c);
  // How an incoming connection that ends now ended: in the middle of a frame or between frames.
  static Ending ending_of(const MessageIncoming& c) noexcept {
    return c.assembler.mid_frame() || c.has_pending ? Ending::truncated : Ending::normal;
  }
  void close_wire(IncomingConnection& c) noexcept final;
  void resume_wire(IncomingConnection& c) final;

 private:
  void retire(MessageOutgoing& c, std::size_t frames) noexcept;
  void deliver_arrived(MessageIncoming& c);
  // Brings c's buffers into the budget's count (they change as messages arrive and are taken).
  void count_held(MessageIncoming& c) noexcept;
  // After replenishing: whether c's sender is left without credit and c without a buffer; counted and logged.
  void note_starvation(MessageIncoming& c);

  MessageSettings messages_;
  std::size_t gather_limit_ = 1;
  std::size_t send_depth_ = 1;
  std::size_t receive_depth_ = 2;
  std::size_t receive_budget_ = 2;
  // The frames of small messages (small_message_limit) are copied into blocks of this pool and the receive buffer
  // taken back at once, instead of pinning it for as long as an application keeps them.
  mem::Pool* small_frames_ = nullptr;
  // Buffers all incoming connections hold (the budget's use): the receive thread counts, reports read.
  std::atomic<std::size_t> receive_held_{0};
  std::chrono::steady_clock::time_point last_starvation_log_{};
  std::uint64_t unlogged_starvations_ = 0;
};

}  // namespace daqx::pt
