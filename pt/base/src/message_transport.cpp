// Credit-paced sending, in-order retirement, receive buffers and credits, and message-to-frame assembly for
// the transports that send messages into pre-posted buffers.
#include "daqx/pt/message_transport.hpp"

#include <algorithm>

namespace daqx::pt {

MessageTransport::MessageTransport(TransportHost& host, Describe describe)
    : ConnectionTransport(host, describe), messages_(MessageSettings::from(host.params())) {}

void MessageTransport::set_limits(std::size_t gather_limit, std::size_t send_depth, std::size_t receive_depth) noexcept {
  gather_limit_ = std::clamp<std::size_t>(gather_limit, 1, MessagePieces::kMaxPieces);
  send_depth_ = std::max<std::size_t>(1, send_depth);
  receive_depth_ = std::max<std::size_t>(2, receive_depth);
}

// ---- sending ----------------------------------------------------------------------------------------------

void MessageTransport::pump(OutgoingConnection& base) noexcept {
  auto& c = static_cast<MessageOutgoing&>(base);
  SendLink* link = c.link;
  if (link == nullptr || !link->connected || link->closed || !c.failure.empty() || !link->credits.ready()) return;
  while (!c.queue.empty()) {
    if (link->credits.available() == 0) {
      if (!c.waiting_for_credits) c.counters.credit_waits.fetch_add(1, std::memory_order_relaxed);
      c.waiting_for_credits = true;
      return;
    }
    if (link->ring.full()) return;  // a completion pumps again
    MessagePieces pieces;
    SendCursor cursor = c.cursor;
    const bool ends_frame =
        next_message(c.queue.front(), cursor, link->credits.buffer_size(), gather_limit_, registration_slot(), pieces);
    const Message message{pieces, link->ring.next_slot(), ends_frame, ends_frame && c.cursor.at_frame_start(),
                          c.queue.size() == 1};
    const Posted posted = post_message(c, *link, message);
    if (posted == Posted::again || posted == Posted::failed) {
      // The wire's queue is full (messages in flight will pump again, or the send thread retries), or the post
      // failed and the send thread tears the connection down.
      request_attention();
      return;
    }
    c.waiting_for_credits = false;
    if (ends_frame) {
      const std::size_t bytes = c.queue.front().total_size();
      mem::Ref frame = c.take_front();
      if (posted == Posted::released) frame.reset();  // its bytes were copied: the blocks can go back now
      link->ring.add(std::move(frame), bytes);
    } else {
      link->ring.add(mem::Ref{}, 0);
    }
    c.cursor = cursor;
    link->credits.consume();
  }
}

void MessageTransport::message_sent(MessageOutgoing& c, SendLink& link, std::size_t slot) {
  link.ring.complete(slot, [&](std::size_t bytes) {
    c.counters.frames.fetch_add(1, std::memory_order_relaxed);
    c.counters.bytes.fetch_add(bytes, std::memory_order_relaxed);
  });
  if (c.link == &link) pump(c);
}

void MessageTransport::messages_sent_through(MessageOutgoing& c, SendLink& link, std::size_t slot) {
  link.ring.complete_through(slot, [&](std::size_t bytes) {
    c.counters.frames.fetch_add(1, std::memory_order_relaxed);
    c.counters.bytes.fetch_add(bytes, std::memory_order_relaxed);
  });
  if (c.link == &link) pump(c);
}

void MessageTransport::credits_granted(MessageOutgoing& c, SendLink& link, const CreditMessage& message) {
  link.credits.grant(message);
  if (c.link == &link) pump(c);
}

std::size_t MessageTransport::release_link(MessageOutgoing& c, SendLink& link) noexcept {
  link.closed = true;
  link.connected = false;
  if (c.link == &link) c.link = nullptr;
  c.cursor = SendCursor{};
  c.waiting_for_credits = false;
  return link.ring.release();
}

void MessageTransport::outgoing_metrics(const OutgoingConnection& base, std::vector<Metric>& metrics) const {
  const auto& c = static_cast<const MessageOutgoing&>(base);
  const double credits = c.link != nullptr ? static_cast<double>(c.link->credits.available()) : 0;
  metrics.push_back({"credits", Metric::Kind::gauge, credits, "messages the receiver has buffers for", {}});
}

// ---- receiving --------------------------------------------------------------------------------------------

bool MessageTransport::take_message(MessageIncoming& c, mem::Ref&& buffer, std::size_t length) {
  ++c.consumed;
  Frame frame;
  switch (c.assembler.add(std::move(buffer), length, frame)) {
    case FrameAssembler::Result::need_more:
      return true;
    case FrameAssembler::Result::bad:
      close_incoming(c, c.assembler.error(), Ending::bad);
      return false;
    case FrameAssembler::Result::frame:
      return deliver(c, frame);
  }
  return false;
}

void MessageTransport::consume_held(MessageIncoming& c) {
  while (!c.closed && !c.paused && !c.held.empty()) {
    auto [buffer, length] = std::move(c.held.front());
    c.held.pop_front();
    if (!take_message(c, std::move(buffer), length)) return;
  }
}

void MessageTransport::message_arrived(MessageIncoming& c, mem::Ref&& buffer, std::size_t length) {
  c.credits.received();
  if (c.paused || !c.held.empty()) {
    // A delivery waits: this message waits behind it, and its buffer is not re-posted meanwhile, so the sender
    // runs out of credits. Back-pressure reaches it without a message.
    c.held.emplace_back(std::move(buffer), length);
  } else if (!take_message(c, std::move(buffer), length)) {
    if (c.closed) return;
  }
  replenish(c);
  send_credits(c);
}

void MessageTransport::replenish(MessageIncoming& c) {
  while (!c.closed && c.posted - c.consumed < receive_depth_) {
    std::string error;
    switch (post_receive_buffer(c, error)) {
      case Post::posted:
        c.waiting_for_pool = false;
        ++c.posted;
        c.credits.posted();
        continue;
      case Post::no_memory:
        // Back-pressure: no credits go out for buffers we do not have; the pool calls when it has blocks.
        if (!c.waiting_for_pool) events().receive_pool_waits.fetch_add(1, std::memory_order_relaxed);
        c.waiting_for_pool = true;
        return;
      case Post::no_room:
        c.waiting_for_pool = true;
        return;
      case Post::again:
        c.waiting_for_pool = true;
        request_resume();
        return;
      case Post::failed:
        close_incoming(c, error, Ending::normal);
        return;
    }
  }
}

void MessageTransport::send_credits(MessageIncoming& c) {
  while (c.up && !c.closed && c.credits.report_due()) {
    std::string error;
    const CreditMessage message{static_cast<std::uint32_t>(messages_.receive_buffer_size), c.credits.posted_total()};
    switch (post_credits(c, message, error)) {
      case Post::posted:
        c.credits.report();
        continue;
      case Post::no_memory:
      case Post::no_room:
        return;  // a credit message in flight completes soon and calls again
      case Post::again:
        request_resume();
        return;
      case Post::failed:
        close_incoming(c, "sending credits: " + error, Ending::normal);
        return;
    }
  }
}

void MessageTransport::close_wire(IncomingConnection& base) noexcept {
  auto& c = static_cast<MessageIncoming&>(base);
  close_receive_link(c);  // after this the wire writes into none of the buffers below
  c.held.clear();
  c.assembler.reset();  // a frame half received goes back to the pool
}

void MessageTransport::resume_wire(IncomingConnection& base) {
  auto& c = static_cast<MessageIncoming&>(base);
  consume_held(c);
  if (c.closed) return;
  replenish(c);
  send_credits(c);
}

}  // namespace daqx::pt
