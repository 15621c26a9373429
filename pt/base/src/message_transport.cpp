// Credit-paced, packing sends, in-order retirement, receive buffers and credits, and message-to-frame assembly
// for the transports that send messages into pre-posted buffers.
#include "daqx/pt/message_transport.hpp"

#include <algorithm>

namespace daqx::pt {

MessageTransport::MessageTransport(TransportHost& host, Describe describe)
    : ConnectionTransport(host, describe),
      messages_(MessageSettings::from(host.params())),
      receive_budget_(std::max<std::size_t>(1, messages_.receive_pool_bytes / messages_.receive_buffer_size / 4)),
      small_frames_(&host.make_pool("small", small_frame_pool_config(messages_))) {}

void MessageTransport::prepare_incoming(MessageIncoming& c) noexcept {
  c.assembler.copy_small_frames(small_frames_, small_message_limit(messages_));
}

void MessageTransport::cap_receive_budget(std::size_t buffers) noexcept {
  receive_budget_ = std::clamp<std::size_t>(buffers, 1, receive_budget_);
}

std::size_t MessageTransport::connection_depth() const noexcept {
  const std::size_t sharing = std::max<std::size_t>({host().planned_incoming(), incoming_open(), 1});
  return std::clamp<std::size_t>(receive_budget_ / sharing, 1, receive_depth_);
}

std::pair<std::size_t, std::string> MessageTransport::incoming_capacity() const {
  auto capacity = ConnectionTransport::incoming_capacity();
  if (receive_budget_ >= capacity.first) return capacity;
  return {receive_budget_, "the receive budget (" + std::to_string(receive_budget_) + " buffers of " +
                               std::to_string(messages_.receive_buffer_size) +
                               " B, a quarter of recvPoolSize) gives each open connection one; raise recvPoolSize or "
                               "lower recvBufferSize"};
}

void MessageTransport::set_limits(std::size_t gather_limit, std::size_t send_depth, std::size_t receive_depth) noexcept {
  gather_limit_ = std::clamp<std::size_t>(gather_limit, 1, MessagePieces::kMaxPieces);
  send_depth_ = std::max<std::size_t>(1, send_depth);
  receive_depth_ = std::max<std::size_t>(2, receive_depth);
}

std::size_t MessageTransport::views_needed() const noexcept {
  // Frames handed out of packed buffers and not yet released: bounded by what the applications hold (their
  // inboxes and what they keep). When they run out, receiving waits for one as it waits for a buffer.
  const std::size_t buffers = std::max<std::size_t>(1, messages_.receive_pool_bytes / messages_.receive_buffer_size);
  return std::clamp<std::size_t>(buffers * 64, 1024, 65536);
}

// ---- sending ----------------------------------------------------------------------------------------------

void MessageTransport::pump(OutgoingConnection& base) noexcept {
  auto& c = static_cast<MessageOutgoing&>(base);
  SendLink* link = c.link;
  if (link == nullptr || !link->connected || link->closed || !c.failure.empty() || !link->credits.ready()) return;
  // A message holds at most one receive buffer's worth; packing waits (throughput mode) for a pack that big.
  const std::size_t buffer = link->credits.buffer_size();
  const std::size_t pack_limit = std::min(connection_settings().pack_bytes, buffer);
  while (c.cursor.frame < c.queue.size()) {
    if (hold_for_packing(c, c.queued_bytes - c.bytes_in_messages, pack_limit)) return;
    if (link->credits.available() == 0) {
      if (!c.waiting_for_credits) c.counters.credit_waits.add();
      c.waiting_for_credits = true;
      return;
    }
    if (link->ring.full()) return;  // a completion pumps again
    MessagePieces pieces;
    SendCursor cursor = c.cursor;
    // Always packed: frames that are queued together go together (fewer messages, fewer credits); in
    // latency mode a frame only waits when the wire is busy anyway.
    next_message(c.queue, cursor, buffer, gather_limit_, registration_slot(), true, pieces);
    const Message message{pieces, link->ring.next_slot(), cursor.frame >= c.queue.size()};
    const Posted posted = post_message(c, *link, message);
    if (posted != Posted::ok) {
      // The wire's queue is full (messages in flight will pump again, or the send thread retries), or the post
      // failed and the send thread tears the connection down.
      request_attention(c);
      return;
    }
    c.waiting_for_credits = false;
    c.counters.messages_sent.add();
    link->ring.add(pieces.frames_ended);
    c.bytes_in_messages += pieces.bytes;
    c.cursor = cursor;
    link->credits.consume();
  }
  c.flush_now = false;  // everything queued is on the wire
}

void MessageTransport::retire(MessageOutgoing& c, std::size_t frames) noexcept {
  // The messages carrying these frames are all sent: the frames leave the queue and their blocks go back.
  for (std::size_t i = 0; i < frames && !c.queue.empty(); ++i) {
    const std::size_t bytes = c.queue.front().total_size();
    c.counters.frames_sent.add();
    c.counters.bytes_sent.add(bytes);
    c.bytes_in_messages -= std::min(c.bytes_in_messages, bytes);
    c.pop_front();
    if (c.cursor.frame > 0) --c.cursor.frame;
  }
}

void MessageTransport::message_sent(MessageOutgoing& c, SendLink& link, std::size_t slot) {
  if (c.link != &link) return;
  link.ring.complete(slot, [&](std::size_t frames) { retire(c, frames); });
  pump(c);
}

void MessageTransport::messages_sent_through(MessageOutgoing& c, SendLink& link, std::size_t slot) {
  if (c.link != &link) return;
  link.ring.complete_through(slot, [&](std::size_t frames) { retire(c, frames); });
  pump(c);
}

void MessageTransport::credits_granted(MessageOutgoing& c, SendLink& link, const CreditMessage& message) {
  link.credits.grant(message);
  if (c.link == &link) pump(c);
}

void MessageTransport::release_link(MessageOutgoing& c, SendLink& link) noexcept {
  link.closed = true;
  link.connected = false;
  link.ring.clear();
  if (c.link == &link) c.link = nullptr;
  c.cursor = SendCursor{};
  c.bytes_in_messages = 0;
  c.waiting_for_credits = false;
}

void MessageTransport::outgoing_metrics(const OutgoingConnection& base, std::vector<Metric>& metrics) const {
  const auto& c = static_cast<const MessageOutgoing&>(base);
  const double credits = c.link != nullptr ? static_cast<double>(c.link->credits.available()) : 0;
  metrics.push_back({"credits", Metric::Kind::gauge, credits, "messages the receiver has buffers for", {}});
}

// ---- receiving --------------------------------------------------------------------------------------------

void MessageTransport::deliver_arrived(MessageIncoming& c) {
  while (!c.closed && !c.paused) {
    Frame frame;
    switch (c.assembler.next(frame)) {
      case FrameAssembler::Result::frame:
        if (!deliver(c, frame)) return;  // paused (kept, delivered on resume) or closed
        continue;
      case FrameAssembler::Result::need_more:
        return;
      case FrameAssembler::Result::no_views:
        // Back-pressure as for buffers: the frames wait in their message until the pool has views again.
        if (!c.waiting_for_pool) events().receive_pool_waits.add();
        c.waiting_for_pool = true;
        return;
      case FrameAssembler::Result::bad:
        close_incoming(c, c.assembler.error(), Ending::bad);
        return;
    }
  }
}

void MessageTransport::message_arrived(MessageIncoming& c, mem::Ref&& buffer, std::size_t length) {
  c.credits.received();
  // While a delivery waits, the message waits behind it in the assembler, and its buffer is not replaced
  // meanwhile, so the sender runs out of credits: back-pressure reaches it without a message.
  c.assembler.push(std::move(buffer), length);
  deliver_arrived(c);
  if (c.closed) return;
  replenish(c);
  send_credits(c);
}

void MessageTransport::report_wire(MetricSink& sink) const {
  sink.setting("receive_budget", static_cast<double>(receive_budget_),
               "receive buffers all incoming connections may hold together (a quarter of recvPoolSize)");
  sink.gauge("receive_buffers_held", static_cast<double>(receive_held_.load(std::memory_order_relaxed)),
             "receive buffers the incoming connections hold now (posted, or with messages not yet taken)");
  sink.gauge("receive_depth_per_connection", static_cast<double>(connection_depth()),
             "receive buffers each incoming connection keeps posted now (the budget shared, at most recvDepth)");
}

void MessageTransport::count_held(MessageIncoming& c) noexcept {
  const std::uint64_t held = c.closed ? 0 : c.posted - c.consumed();
  receive_held_.store(receive_held_.load(std::memory_order_relaxed) + held - c.held, std::memory_order_relaxed);
  c.held = held;
  c.buffers.receive_buffers.set(held);
}

void MessageTransport::note_starvation(MessageIncoming& c) {
  const bool starved = !c.closed && c.credits.unfilled() == 0;
  const bool was = c.buffers.starved.load() != 0;
  if (starved == was) return;
  c.buffers.starved.set(starved ? 1 : 0);
  if (!starved) {
    events().connections_starved.sub();
    return;
  }
  events().connections_starved.add();
  events().receive_starvations.add();
  c.buffers.starvations.add();
  ++unlogged_starvations_;
  const auto now = Clock::now();
  if (now - last_starvation_log_ < std::chrono::seconds(1)) return;
  host().log(LogLevel::warning,
             std::to_string(unlogged_starvations_) + " time(s) an incoming connection was left without a receive "
             "buffer, the last from " + c.remote + " (" + std::to_string(receive_held_.load()) + " of " +
             std::to_string(receive_budget_) + " budgeted buffers held by " + std::to_string(incoming_open()) +
             " connections): the receive pool is empty, its sender waits for credits");
  last_starvation_log_ = now;
  unlogged_starvations_ = 0;
}

void MessageTransport::replenish(MessageIncoming& c) {
  count_held(c);
  const std::size_t depth = connection_depth();
  while (!c.closed && c.posted - c.consumed() < depth) {
    // Beyond the one buffer its sender needs to go on, only within the budget: a connection that got a larger
    // share while fewer were open gives the excess back as its messages are taken.
    if (c.credits.unfilled() > 0 && receive_held_.load(std::memory_order_relaxed) >= receive_budget_) break;
    std::string error;
    switch (post_receive_buffer(c, error)) {
      case Post::posted:
        c.waiting_for_pool = false;
        ++c.posted;
        c.credits.posted();
        count_held(c);
        if (c.buffers.starved.load() != 0) note_starvation(c);  // it has one again
        continue;
      case Post::no_memory:
        // Back-pressure: no credits go out for buffers we do not have; the pool calls when it has blocks.
        if (!c.waiting_for_pool) events().receive_pool_waits.add();
        c.waiting_for_pool = true;
        note_starvation(c);
        return;
      case Post::no_room:
        c.waiting_for_pool = true;
        note_starvation(c);
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
  c.assembler.reset();    // messages not yet taken and a frame half received go back to the pool
  count_held(c);          // closed: it holds none
  if (c.buffers.starved.exchange(0) != 0)
    events().connections_starved.sub();
}

void MessageTransport::resume_wire(IncomingConnection& base) {
  auto& c = static_cast<MessageIncoming&>(base);
  c.waiting_for_pool = false;
  deliver_arrived(c);
  if (c.closed) return;
  replenish(c);
  send_credits(c);
}

}  // namespace daqx::pt
