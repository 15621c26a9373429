// streams::Subscriber (subscriber.hpp): subscribing, retrying, events to the handler, acknowledgements.
#include "daqx/streams/subscriber.hpp"

#include <algorithm>
#include <condition_variable>
#include <span>

namespace daqx::streams {

Subscriber::Subscriber(ApplicationContext& context, Handler handler) : context_(context), handler_(std::move(handler)) {
  context_.bind(function::reply, [this](Frame&& frame) { on_reply(std::move(frame)); });
  // A batch at a time, so that what the handler consumed is acknowledged after the last record of a batch (if the
  // last acknowledgement is kAckInterval old: one clock read a batch).
  context_.bind_batch(function::data, [this](std::span<Frame> frames) {
    for (Frame& frame : frames) on_data(frame);
    const auto now = std::chrono::steady_clock::now();
    for (Wanted& w : wanted_)
      if (w.subscription != 0 && w.consumed > w.acknowledged && now - w.acknowledged_at >= kAckInterval)
        acknowledge(w, now);
  });
}

Subscriber::~Subscriber() {
  if (ticker_.joinable()) {
    ticker_.request_stop();
    ticker_.join();
  }
}

void Subscriber::send_control(const Wanted& w, ControlKind kind, std::uint64_t transaction) {
  ControlMessage m;
  m.kind = kind;
  m.policy = w.policy;
  m.subscription = w.subscription;
  m.sequence = w.consumed;
  if (kind == ControlKind::subscribe) m.stream = w.stream;
  mem::Ref frame = context_.allocate_frame(control_bytes(m));
  if (!frame) return;  // a subscribe is sent again by the retry, an acknowledgement with the next one
  encode(m, frame.data() + kFrameHeaderSize);
  // At once, whatever the endpoint's mode: a lone small message has nothing to be packed with, and in throughput
  // mode it would wait packTimeout for the send thread instead of being written by this thread.
  context_.send(w.publisher, function::control, transaction, frame, frame_flags::send_now);
}

void Subscriber::acknowledge(Wanted& w, std::chrono::steady_clock::time_point now) {
  send_control(w, ControlKind::acknowledge, 0);
  w.acknowledged = w.consumed;
  w.acknowledged_at = now;
}

void Subscriber::subscribe(Tid publisher, const std::string& stream, const Policy& policy) {
  auto same = std::find_if(wanted_.begin(), wanted_.end(),
                           [&](const Wanted& w) { return w.publisher == publisher && w.stream == stream; });
  if (same == wanted_.end()) same = wanted_.insert(wanted_.end(), Wanted{});
  *same = Wanted{};  // the publisher replaces the subscription it has, if any
  same->publisher = publisher;
  same->stream = stream;
  same->policy = policy;
  same->transaction = next_transaction_++;
  send_control(*same, ControlKind::subscribe, same->transaction);
  if (!ticker_.joinable()) {
    ticker_ = context_.start_worker("subscriber", [this](std::stop_token stop) {
      std::mutex m;
      std::condition_variable_any cv;
      std::unique_lock lock(m);
      while (!stop.stop_requested()) {
        cv.wait_for(lock, stop, std::chrono::seconds(1), [] { return false; });
        if (stop.stop_requested()) break;
        if (!retrying_.exchange(true) && !context_.post_task([this] {
              retrying_.store(false);
              retry_now();
            }))
          retrying_.store(false);
      }
    });
  }
}

void Subscriber::retry_now() {
  for (Wanted& w : wanted_) {
    if (w.subscription == 0) {
      w.transaction = next_transaction_++;
      send_control(w, ControlKind::subscribe, w.transaction);
    } else if (w.consumed > w.acknowledged) {  // idle since, or the pool had no block for the acknowledgement
      acknowledge(w, std::chrono::steady_clock::now());
    }
  }
}

std::size_t Subscriber::accepted() const noexcept {
  return static_cast<std::size_t>(
      std::count_if(wanted_.begin(), wanted_.end(), [](const Wanted& w) { return w.subscription != 0; }));
}

void Subscriber::unsubscribe_all() {
  for (const Wanted& w : wanted_)
    if (w.subscription != 0) send_control(w, ControlKind::unsubscribe, 0);
  wanted_.clear();
}

void Subscriber::on_reply(Frame&& frame) {
  Parsed<ReplyMessage> parsed = parse_reply({frame.payload(), std::min(frame.payload_size(), frame.payload_size_in_head())});
  if (!parsed.message) {
    malformed_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  const ReplyMessage& m = *parsed.message;
  for (Wanted& w : wanted_) {
    if (w.publisher != frame.header.initiator) continue;
    if (m.kind == ReplyKind::ended) {
      if (w.subscription != 0 && w.subscription == m.subscription) {
        w.subscription = 0;  // subscribed again by the next retry
        ended_.fetch_add(1, std::memory_order_relaxed);
      }
      continue;
    }
    if (w.transaction != frame.header.transaction) continue;
    if (m.kind == ReplyKind::accepted) {
      w.subscription = m.subscription;
      w.consumed = w.acknowledged = w.dropped = 0;
    } else {
      refusals_.fetch_add(1, std::memory_order_relaxed);
      std::string why = w.stream + " of " + std::to_string(w.publisher) + ": " + m.reason;
      context_.log(LogLevel::warning, "stream " + why + " (refused; asked again every second)");
      std::lock_guard lock(refusal_mutex_);
      last_refusal_ = std::move(why);
    }
  }
}

void Subscriber::on_data(Frame& frame) {
  const std::size_t in_head = frame.payload_size_in_head();
  Parsed<DataHeader> parsed = parse_data({frame.payload(), in_head});
  if (!parsed.message) {
    malformed_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  const DataHeader& h = *parsed.message;
  auto w = std::find_if(wanted_.begin(), wanted_.end(), [&](const Wanted& x) {
    return x.subscription == h.subscription && x.publisher == frame.header.initiator;
  });
  if (w == wanted_.end() || h.sequence == 0) return;  // unsubscribed meanwhile, or a probe (no event)
  if (h.sequence <= w->consumed) {  // a sequence goes up: a record again or out of order is no record
    malformed_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  StreamEvent event{h.subscription, h.sequence, h.key, h.dropped, {}};
  const std::size_t at = kFrameHeaderSize + kDataHeaderBytes;
  mem::Ref rest = frame.data.detach_next();
  if (frame.data.size() > at) {  // the event's first bytes share the head block with the headers
    event.bytes = frame.data.view(at, frame.data.size() - at);
    if (!event.bytes) {
      malformed_.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    if (rest) event.bytes.append(std::move(rest));
  } else {
    event.bytes = std::move(rest);
  }
  frame.data.reset();  // the headers' block goes back before the handler runs (it may keep the event)
  received_.fetch_add(1, std::memory_order_relaxed);
  gaps_.fetch_add(h.sequence - w->consumed - 1, std::memory_order_relaxed);
  if (h.dropped > w->dropped) dropped_.fetch_add(h.dropped - w->dropped, std::memory_order_relaxed);
  w->dropped = std::max(w->dropped, h.dropped);
  w->consumed = h.sequence;
  const Tid publisher = w->publisher;
  handler_(event);  // may subscribe or unsubscribe: w is found again
  w = std::find_if(wanted_.begin(), wanted_.end(),
                   [&](const Wanted& x) { return x.subscription == h.subscription && x.publisher == publisher; });
  if (w != wanted_.end() && w->consumed - w->acknowledged >= std::max<std::uint32_t>(1, w->policy.depth / 4))
    acknowledge(*w, std::chrono::steady_clock::now());
}

void Subscriber::report(MetricSink& sink) const {
  sink.counter("stream_events_received", static_cast<double>(received_.load(std::memory_order_relaxed)),
               "events received from streams");
  sink.counter("stream_events_dropped_by_publisher", static_cast<double>(dropped_.load(std::memory_order_relaxed)),
               "events the publishers' policies dropped for this subscriber (from the records' dropped field)");
  sink.counter("stream_sequence_gaps", static_cast<double>(gaps_.load(std::memory_order_relaxed)),
               "records missing in a subscription's sequence (the publisher counts drops instead: 0)");
  sink.counter("stream_refusals", static_cast<double>(refusals_.load(std::memory_order_relaxed)),
               "subscribe requests refused (the reason: last_refusal, and the log)");
  sink.counter("stream_subscriptions_ended", static_cast<double>(ended_.load(std::memory_order_relaxed)),
               "subscriptions the publisher ended (it halted or forgot this subscriber); subscribed again");
  sink.counter("stream_frames_malformed", static_cast<double>(malformed_.load(std::memory_order_relaxed)),
               "reply and data frames that did not parse, or a record out of its sequence");
}

std::string Subscriber::last_refusal() const {
  std::lock_guard lock(refusal_mutex_);
  return last_refusal_;
}

}  // namespace daqx::streams
