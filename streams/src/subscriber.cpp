// streams::Subscriber (subscriber.hpp): subscribing, retrying, events to the handler, acknowledgements.
#include "daqx/streams/subscriber.hpp"

#include <algorithm>
#include <condition_variable>
#include <mutex>

namespace daqx::streams {

Subscriber::Subscriber(ApplicationContext& context, Handler handler) : context_(context), handler_(std::move(handler)) {
  context_.bind(function::reply, [this](Frame&& frame) { on_reply(std::move(frame)); });
  context_.bind(function::data, [this](Frame&& frame) { on_data(std::move(frame)); });
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
  if (!frame) return;  // tried again by the ticker
  encode(m, frame.data() + kFrameHeaderSize);
  context_.send(w.publisher, function::control, transaction, frame);
}

void Subscriber::subscribe(Tid publisher, const std::string& stream, const Policy& policy) {
  Wanted w;
  w.publisher = publisher;
  w.stream = stream;
  w.policy = policy;
  w.transaction = next_transaction_++;
  wanted_.push_back(w);
  send_control(wanted_.back(), ControlKind::subscribe, wanted_.back().transaction);
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
              retry();
            }))
          retrying_.store(false);
      }
    });
  }
}

void Subscriber::retry() {
  for (Wanted& w : wanted_) {
    if (w.subscription == 0) {
      w.transaction = next_transaction_++;
      send_control(w, ControlKind::subscribe, w.transaction);
    } else if (w.consumed > w.acknowledged) {  // idle: what was consumed since the last acknowledgement
      send_control(w, ControlKind::acknowledge, 0);
      w.acknowledged = w.consumed;
    }
  }
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
      if (w.subscription == m.subscription) w.subscription = 0;  // subscribed again by the ticker
      continue;
    }
    if (w.transaction != frame.header.transaction) continue;
    if (m.kind == ReplyKind::accepted) {
      w.subscription = m.subscription;
      w.consumed = w.acknowledged = 0;
    } else {
      refusals_.fetch_add(1, std::memory_order_relaxed);
      context_.log(LogLevel::warning, "stream " + w.stream + " of " + std::to_string(w.publisher) + " refused: " + m.reason);
    }
  }
}

void Subscriber::on_data(Frame&& frame) {
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
  received_.fetch_add(1, std::memory_order_relaxed);
  handler_(event);
  w->consumed = std::max(w->consumed, h.sequence);
  if (w->consumed - w->acknowledged >= std::max<std::uint32_t>(1, w->policy.depth / 4)) {
    send_control(*w, ControlKind::acknowledge, 0);
    w->acknowledged = w->consumed;
  }
}

void Subscriber::report(MetricSink& sink) const {
  sink.counter("stream_events_received", static_cast<double>(received_.load(std::memory_order_relaxed)),
               "events received from streams");
  sink.counter("stream_refusals", static_cast<double>(refusals_.load(std::memory_order_relaxed)),
               "subscribe requests refused");
  sink.counter("stream_frames_malformed", static_cast<double>(malformed_.load(std::memory_order_relaxed)),
               "reply and data frames that did not parse");
}

}  // namespace daqx::streams
