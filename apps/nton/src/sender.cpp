// nton::Sender: the send loop on its own worker thread, the acknowledgement handler on the dispatch thread.
//
// Why a worker thread and not the dispatch thread: filling and sending frames is all the sender does, and
// a dedicated (pinned) thread does it back to back, while acknowledgements are handled in parallel on the
// dispatch thread. Driving the loop from the dispatch thread would interleave the two on one core and go
// through the task queue (a mutex) for every batch. The two threads share only atomics: the worker writes
// what it sent, the handler what came back acknowledged; the worker sleeps (Wakeup) when the window is full,
// a send would block or the pool is empty, and the handler and the on_send_ready / on_pool_available
// callbacks wake it.
#include "sender.hpp"


#include <algorithm>
#include <array>
#include <stdexcept>
#include <utility>

#include "chain_logic.hpp"
#include "daqx/nton/protocol.hpp"
#include "pattern_logic.hpp"
#include "daqx/apps/text.hpp"
#include "daqx/services/number_text.hpp"

namespace daqx::nton {
using namespace daqx::apps;  // parameter helpers, rate meters, latency summaries, wake-ups
namespace {

using Clock = std::chrono::steady_clock;

constexpr auto kPoll = std::chrono::milliseconds(50);      // longest sleep without news: stop and deadlines are seen this soon
constexpr auto kStopDrain = std::chrono::seconds(1);       // after stop(): how long to wait for the last acknowledgements
constexpr auto kDrainPatience = std::chrono::seconds(5);   // at the natural end: give up after this long without one
constexpr std::uint64_t kMaxPayload = kDefaultMaxFrameSize - kFrameHeaderSize;
constexpr std::uint64_t kMaxBatch = 1024;


}  // namespace

// One receiver as the sender sees it during a run. `sent` is written by the worker only and `acked` by the
// acknowledgement handler only, each on its own cache line.
struct ReceiverProxy {
  Tid tid = kNoTid;
  alignas(64) std::atomic<std::uint64_t> sent{0};   // highest sequence sent
  alignas(64) std::atomic<std::uint64_t> acked{0};  // highest sequence acknowledged
  // Worker only.
  bool asked_for_ack = true;  // the last frame sent asked to be acknowledged at once (nothing sent: nothing to ask)
  bool failed = false;        // its connection failed: skipped from then on

  // An acknowledgement can overtake the worker's store of `sent` (the receiver is fast), hence the floor.
  std::uint64_t outstanding() const noexcept {
    const std::uint64_t s = sent.load(std::memory_order_relaxed);
    const std::uint64_t a = acked.load(std::memory_order_acquire);
    return s > a ? s - a : 0;
  }
};

// The receivers of one enable..stop, made by enable() and kept until the acknowledgement handler can no
// longer be looking at them (see Sender::retire).
struct SenderRun {
  SenderRun(std::uint32_t run_id, const std::vector<Tid>& tids) : id(run_id), receivers(tids.size()) {
    for (std::size_t i = 0; i < tids.size(); ++i) {
      receivers[i].tid = tids[i];
      by_tid.emplace_back(tids[i], i);
    }
    std::sort(by_tid.begin(), by_tid.end());
  }

  ReceiverProxy* find(Tid tid) noexcept {
    auto at = std::lower_bound(by_tid.begin(), by_tid.end(), std::make_pair(tid, std::size_t{0}));
    return at != by_tid.end() && at->first == tid ? &receivers[at->second] : nullptr;
  }

  const std::uint32_t id;
  std::vector<ReceiverProxy> receivers;              // in round-robin order
  std::vector<std::pair<Tid, std::size_t>> by_tid;  // sorted: TID -> index in receivers
};

namespace {

// The frame sizes of frameSizes, each 0 .. kMaxPayload; `error` says which item is not one.
std::vector<std::uint64_t> read_frame_sizes(const ParamSet& params, std::string& error) {
  std::vector<std::uint64_t> sizes;
  for (const std::string& item : params.list("frameSizes")) {
    const numbers::Parsed<std::uint64_t> bytes = numbers::parse_unsigned(item, 0, kMaxPayload);
    if (!bytes) {
      error = concatenate({"frameSizes: ", bytes.error});
      return {};
    }
    sizes.push_back(std::max<std::uint64_t>(*bytes, kDataHeaderSize));
  }
  return sizes;
}

std::string check_frame_sizes(const ParamSet& params) {
  std::string error;
  read_frame_sizes(params, error);
  return error;
}

}  // namespace

std::vector<ParamSpec> Sender::parameters() {
  const SenderConfiguration d;
  return {
      param("receivers", ParamType::applications, "class:nton::Receiver", "", "applications to send to, round-robin"),
      param("frameSize", ParamType::unsigned_integer, to_text(d.frame_size), "bytes",
            "payload bytes per frame, including the 32-byte data header (less: the header alone)", 0,
            static_cast<double>(kMaxPayload)),
      checked_by(param("frameSizes", ParamType::string_list, "", "bytes",
                       "sizes of successive frames, cycled (e.g. 64,70000,1000 to mix small, chained and medium "
                       "frames); empty: every frame frameSize"),
                 check_frame_sizes),
      param("frameCount", ParamType::unsigned_integer, to_text(d.frame_count), "frames",
            "frames to send in all, then stop sending; 0: no limit", 0),
      param("duration", ParamType::real, to_text(d.duration), "s", "seconds to send for, then stop sending; 0: no limit",
            0),
      param("window", ParamType::unsigned_integer, to_text(d.window), "frames",
            "frames outstanding per receiver without acknowledgement", 1),
      param("ackEvery", ParamType::unsigned_integer, to_text(d.ack_every), "frames",
            "receivers acknowledge every this many frames (told in each frame; at most window)", 1),
      param("batch", ParamType::unsigned_integer, to_text(d.batch), "frames",
            "frames allocated and sent in one call, to one receiver at a time (1: one by one); frameSizes is not "
            "used with batches", 1, static_cast<double>(kMaxBatch)),
      param("parts", ParamType::unsigned_integer, to_text(d.parts), "parts",
            "send each frame as a multipart message: the data header a part of its own and the payload cut into "
            "this many parts, each in blocks of its own (0: ordinary frames; not with batch)",
            0, static_cast<double>(kMaxParts - 1)),
      param("pattern", ParamType::boolean, to_text(d.pattern), "",
            "fill payloads with a pattern of (sender, sequence) that receivers verify"),
  };
}

Sender::Sender(ApplicationContext& context) : Application(context) {
  context.bind(function::ack, [this](Frame&& frame) { on_ack(std::move(frame)); });
  context.on_send_ready([this] { wakeup_.notify(); });
  context.on_pool_available([this] { wakeup_.notify(); });
}

Sender::~Sender() { stop_worker(); }

void Sender::configure() {
  const ParamSet& params = context().params();
  SenderConfiguration c;
  c.receivers = params.applications("receivers");
  c.frame_size = params.unsigned_integer("frameSize");
  std::string error;
  c.frame_sizes = read_frame_sizes(params, error);  // checked when set: no error left here
  if (!error.empty()) throw std::runtime_error(error);
  c.frame_count = params.unsigned_integer("frameCount");
  c.duration = params.real("duration");
  c.window = params.unsigned_integer("window");
  c.ack_every = params.unsigned_integer("ackEvery");
  c.batch = params.unsigned_integer("batch");
  c.parts = params.unsigned_integer("parts");
  c.pattern = params.boolean("pattern");

  if (c.receivers.empty())
    throw std::runtime_error(concatenate({"no receivers: '", params.text("receivers"), "' selects no application"}));
  if (std::find(c.receivers.begin(), c.receivers.end(), context().tid()) != c.receivers.end())
    throw std::runtime_error(concatenate({"receivers: '", params.text("receivers"), "' selects this sender itself"}));
  if (c.parts > 0 && c.batch > 1)
    throw std::runtime_error(concatenate({"parts ", to_text(c.parts), " with batch ", to_text(c.batch),
                                          ": multipart messages go one at a time (batch 1)"}));
  if (c.window == 0) throw std::runtime_error("window must be at least 1");
  if (c.ack_every == 0) throw std::runtime_error("ackEvery must be at least 1");
  // A receiver waiting for ackEvery frames while the sender waits for an acknowledgement would stall both.
  if (c.ack_every > c.window) {
    context().log(LogLevel::info, concatenate({"ackEvery ", to_text(c.ack_every), " is above window ",
                                               to_text(c.window), ": receivers acknowledge every ",
                                               to_text(c.window), " frames"}));
    c.ack_every = c.window;
  }
  if (c.frame_size < kDataHeaderSize)
    context().log(LogLevel::info, concatenate({"frameSize ", to_text(c.frame_size), " is below the ",
                                               to_text(std::uint64_t{kDataHeaderSize}),
                                               "-byte data header: frames carry the header alone"}));
  config_ = std::move(c);
}

void Sender::enable() {
  stop_worker();  // a run that ended by itself: its thread is finished, join it
  ++runs_;
  auto run = std::make_unique<SenderRun>(runs_, config_.receivers);
  SenderRun* started = run.get();
  run_counters_.reset();
  started_at_.store(0, std::memory_order_relaxed);
  finished_at_.store(0, std::memory_order_relaxed);
  done_.store(false, std::memory_order_relaxed);
  run_.store(started, std::memory_order_release);
  current_run_.store(runs_, std::memory_order_release);
  retire(std::exchange(run_owner_, std::move(run)));
  worker_ = context().start_worker("sender", [this, started](std::stop_token stop) { send_loop(*started, stop); });
}

void Sender::stop() { stop_worker(); }

void Sender::halt() {
  stop_worker();
  run_.store(nullptr, std::memory_order_release);
  retire(std::move(run_owner_));
}

void Sender::stop_worker() {
  if (!worker_.joinable()) return;
  worker_.request_stop();
  wakeup_.notify();
  worker_.join();  // at most kStopDrain plus one kPoll: the worker stops sending at once, then drains
}

// The acknowledgement handler may have loaded a run just before enable() or halt() replaced it. Handlers run
// one at a time on the dispatch thread, so once a task posted now has run there, none can still hold it:
// the task's copy is the last owner.
void Sender::retire(std::unique_ptr<SenderRun> run) {
  if (!run) return;
  std::shared_ptr<SenderRun> last(std::move(run));
  context().post_task([last]() mutable { last.reset(); });
}

std::size_t Sender::payload_size() const noexcept {
  return static_cast<std::size_t>(std::max<std::uint64_t>(config_.frame_size, kDataHeaderSize));
}

void Sender::send_loop(SenderRun& run, std::stop_token stop) {
  const Clock::time_point start = Clock::now();
  started_at_.store(start.time_since_epoch().count(), std::memory_order_relaxed);
  send_rate_.start(start, 0, 0);
  const Clock::time_point deadline =
      config_.duration > 0
          ? start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(config_.duration))
          : Clock::time_point::max();
  const std::size_t receivers = run.receivers.size();
  std::size_t payload = payload_size();  // of the frame prepared (frameSizes: it changes frame by frame)
  std::size_t active = receivers;  // receivers whose connection has not failed
  std::size_t next = 0;            // round-robin position
  std::uint64_t data_frames = 0;
  mem::Ref frame;  // prepared for run.receivers[next]; kept across would_block
  std::vector<mem::Ref> parts(config_.parts > 0 ? config_.parts + 1 : 0);  // the same as parts (parts > 0)
  PreparedBatch batch(config_.batch);  // the same with batch > 1
  bool asks = false;
  bool give_up_run = false;
  Clock::time_point now = Clock::now();
  unsigned passes_since_clock = 0;

  while (!give_up_run) {
    // Read before any check: a notify after this point ends the wait below (see Wakeup).
    const std::uint64_t seen = wakeup_.generation();
    if (stop.stop_requested()) break;
    // The clock once per 64 passes (and after every wait) is enough for the rate, the duration and the
    // poll deadline, and saves a clock read per small frame.
    if (++passes_since_clock >= 64) {
      passes_since_clock = 0;
      now = Clock::now();
      send_rate_.update(now, run_counters_.frames_sent.load(), run_counters_.bytes_sent.load());
    }
    if (config_.frame_count != 0 && data_frames >= config_.frame_count) break;
    if (now >= deadline || active == 0) break;
    ReceiverProxy& receiver = run.receivers[next];
    if (receiver.failed) {
      next = (next + 1) % receivers;
      continue;
    }
    const Clock::time_point wake_by = std::min(deadline, now + kPoll);
    if (config_.batch > 1) {
      switch (send_batch_to(run, receiver, batch, data_frames)) {
        case BatchStep::sent: next = (next + 1) % receivers; break;
        case BatchStep::wait:
          wakeup_.wait_until(seen, wake_by);
          passes_since_clock = 64;  // read the clock again after a wait
          break;
        case BatchStep::lost:
          --active;
          next = (next + 1) % receivers;
          break;
        case BatchStep::give_up: give_up_run = true; break;
      }
      continue;
    }
    // Strict round-robin, as the CMS test: a full window holds everyone up, so the slowest receiver sets the
    // pace and each receiver gets its exact share of frameCount.
    const std::uint64_t outstanding = receiver.outstanding();
    if (outstanding >= config_.window) {
      wakeup_.wait_until(seen, wake_by);
      passes_since_clock = 64;  // read the clock again after a wait
      continue;
    }
    if (parts.empty() ? !frame : !parts.front()) {
      if (!config_.frame_sizes.empty())
        payload = static_cast<std::size_t>(config_.frame_sizes[data_frames % config_.frame_sizes.size()]);
      // Ask for an acknowledgement at once when this frame fills the window (the receiver may be waiting
      // for more before it acknowledges) or is the last this receiver gets (nothing more will come).
      const bool last = config_.frame_count != 0 && data_frames + active >= config_.frame_count;
      asks = last || outstanding + 1 >= config_.window;
      const std::uint64_t sequence = receiver.sent.load(std::memory_order_relaxed) + 1;
      const std::uint8_t flags = asks ? data_flags::ack_request : std::uint8_t{0};
      if (parts.empty()) {
        frame = context().allocate_frame(payload);
        if (frame) prepare_data(frame, run, sequence, payload, flags);
      }
      if (parts.empty() ? !frame : !prepare_parts(parts, run, sequence, payload, flags)) {
        run_counters_.pool_exhausted.add_single_writer();
        wakeup_.wait_until(seen, wake_by);
        passes_since_clock = 64;  // read the clock again after a wait
        continue;
      }
    }
    const std::uint64_t sequence = receiver.sent.load(std::memory_order_relaxed) + 1;
    // A frame that asks for an ack is the last before we wait: send it (and what is queued before it) at
    // once instead of letting the transport hold it for coalescing.
    const std::uint8_t send_flags = asks ? frame_flags::send_now : std::uint8_t{0};
    const SendStatus status = parts.empty()
                                  ? context().send(receiver.tid, function::data, sequence, frame, send_flags)
                                  : context().send_parts(receiver.tid, function::data, sequence, parts, send_flags);
    switch (status) {
      case SendStatus::ok:
        record_sent(receiver, sequence, payload, asks);
        ++data_frames;
        next = (next + 1) % receivers;
        break;
      case SendStatus::would_block:
        run_counters_.sends_deferred.add_single_writer();
        wakeup_.wait_until(seen, wake_by);
        passes_since_clock = 64;  // read the clock again after a wait
        break;
      case SendStatus::no_route:
        give_up(concatenate({"no route to receiver ", to_text(std::uint64_t{receiver.tid})}));
        receiver.failed = true;
        give_up_run = true;
        break;
      case SendStatus::error:
        lose_receiver(run, receiver);
        --active;
        next = (next + 1) % receivers;
        break;
    }
  }
  frame.reset();  // prepared but not sent: its sequence number was not used
  for (mem::Ref& part : parts) part.reset();
  batch.clear();
  finished_at_.store(Clock::now().time_since_epoch().count(), std::memory_order_relaxed);
  if (!give_up_run) drain(run, stop);
  done_.store(true, std::memory_order_release);
}

// Waits for the acknowledgement of every frame sent: at the natural end for as long as they keep coming,
// after stop() for at most kStopDrain.
void Sender::drain(SenderRun& run, std::stop_token stop) {
  Clock::time_point stop_deadline = stop.stop_requested() ? Clock::now() + kStopDrain : Clock::time_point::max();
  Clock::time_point patience = Clock::now() + kDrainPatience;

  // The frames after a receiver's last acknowledgement (up to ackEvery - 1) would never be acknowledged
  // unless one asks: a header-only end-of-run frame does.
  for (ReceiverProxy& receiver : run.receivers) {
    if (receiver.failed || receiver.asked_for_ack || receiver.outstanding() == 0) continue;
    if (!send_end_of_run(run, receiver, stop, stop_deadline, patience)) break;
  }

  std::uint64_t acked_before = frames_acked_.load(std::memory_order_relaxed);
  while (true) {
    const std::uint64_t seen = wakeup_.generation();
    const Clock::time_point now = Clock::now();
    std::uint64_t outstanding = 0;
    for (const ReceiverProxy& receiver : run.receivers)
      if (!receiver.failed) outstanding += receiver.outstanding();
    if (outstanding == 0) return;
    if (stop.stop_requested() && stop_deadline == Clock::time_point::max()) stop_deadline = now + kStopDrain;
    const std::uint64_t acked = frames_acked_.load(std::memory_order_relaxed);
    if (acked != acked_before) {
      acked_before = acked;
      patience = now + kDrainPatience;
    }
    const Clock::time_point until = std::min(stop_deadline, patience);
    if (now >= until) {
      context().log(LogLevel::warning, concatenate({"stopped waiting for the acknowledgement of ",
                                                    to_text(outstanding), " frames"}));
      return;
    }
    wakeup_.wait_until(seen, std::min(until, now + kPoll));
  }
}

bool Sender::send_end_of_run(SenderRun& run, ReceiverProxy& receiver, std::stop_token stop,
                             Clock::time_point& stop_deadline, Clock::time_point patience) {
  mem::Ref frame;
  while (true) {
    const std::uint64_t seen = wakeup_.generation();
    const Clock::time_point now = Clock::now();
    if (stop.stop_requested() && stop_deadline == Clock::time_point::max()) stop_deadline = now + kStopDrain;
    const Clock::time_point until = std::min(stop_deadline, patience);
    if (now >= until) return false;
    const Clock::time_point wake_by = std::min(until, now + kPoll);
    if (!frame) {
      frame = context().allocate_frame(kDataHeaderSize);
      if (!frame) {
        run_counters_.pool_exhausted.add_single_writer();
        wakeup_.wait_until(seen, wake_by);
        continue;
      }
      prepare_data(frame, run, receiver.sent.load(std::memory_order_relaxed) + 1, kDataHeaderSize,
                   data_flags::ack_request | data_flags::end_of_run);
    }
    const std::uint64_t sequence = receiver.sent.load(std::memory_order_relaxed) + 1;
    // The end-of-run frame asks for the last ack: it goes out at once.
    switch (context().send(receiver.tid, function::data, sequence, frame, frame_flags::send_now)) {
      case SendStatus::ok:
        record_sent(receiver, sequence, kDataHeaderSize, true);
        return true;
      case SendStatus::would_block:
        run_counters_.sends_deferred.add_single_writer();
        wakeup_.wait_until(seen, wake_by);
        break;
      case SendStatus::no_route:
        give_up(concatenate({"no route to receiver ", to_text(std::uint64_t{receiver.tid})}));
        receiver.failed = true;
        return false;
      case SendStatus::error:
        lose_receiver(run, receiver);
        return true;
    }
  }
}

// One batch to one receiver (batch > 1): as many frames as the batch, the window and frameCount allow, allocated
// and sent in one call each. Frames not taken (would_block) stay prepared, with their sequence numbers, and go
// first when the loop comes back to this receiver.
Sender::BatchStep Sender::send_batch_to(SenderRun& run, ReceiverProxy& receiver, PreparedBatch& batch,
                                        std::uint64_t& data_frames) noexcept {
  const std::size_t payload = payload_size();
  if (batch.empty()) {
    const std::uint64_t outstanding = receiver.outstanding();
    if (outstanding >= config_.window) return BatchStep::wait;
    std::uint64_t count = std::min<std::uint64_t>(config_.batch, config_.window - outstanding);
    if (config_.frame_count != 0) count = std::min(count, config_.frame_count - data_frames);
    const std::size_t made = context().allocate_frames(payload, std::span(batch.blocks).first(count));
    if (made == 0) {
      run_counters_.pool_exhausted.add_single_writer();
      return BatchStep::wait;
    }
    // The last frame asks for an acknowledgement at once when it fills the window or ends the run's frames
    // (drain() asks any receiver whose last frame did not).
    const bool asks = outstanding + made >= config_.window ||
                      (config_.frame_count != 0 && data_frames + made >= config_.frame_count);
    const std::uint64_t first = receiver.sent.load(std::memory_order_relaxed) + 1;
    for (std::size_t i = 0; i < made; ++i) {
      const bool last_asks = asks && i + 1 == made;
      prepare_data(batch.blocks[i], run, first + i, payload, last_asks ? data_flags::ack_request : std::uint8_t{0});
      batch.frames[i] = OutgoingFrame{receiver.tid, function::data, first + i, std::move(batch.blocks[i]),
                                      last_asks ? frame_flags::send_now : std::uint8_t{0}};
    }
    batch.size = made;
    batch.at = 0;
    batch.asks = asks;
  }
  const BatchSendResult result = context().send_batch(std::span(batch.frames).subspan(batch.at, batch.size - batch.at));
  if (result.sent > 0) {
    const std::uint64_t last = batch.frames[batch.at + result.sent - 1].transaction;
    batch.at += result.sent;
    receiver.sent.store(last, std::memory_order_release);
    receiver.asked_for_ack = batch.at == batch.size && batch.asks;
    run_counters_.frames_sent.add_single_writer(result.sent);
    run_counters_.bytes_sent.add_single_writer(result.sent * payload);
    data_frames += result.sent;
  }
  if (batch.at == batch.size) {
    batch.clear();
    return BatchStep::sent;
  }
  switch (result.status) {
    case SendStatus::ok:
    case SendStatus::would_block:
      run_counters_.sends_deferred.add_single_writer();
      return BatchStep::wait;
    case SendStatus::no_route:
      batch.clear();
      give_up(concatenate({"no route to receiver ", to_text(std::uint64_t{receiver.tid})}));
      receiver.failed = true;
      return BatchStep::give_up;
    case SendStatus::error:
      batch.clear();
      lose_receiver(run, receiver);
      return BatchStep::lost;
  }
  return BatchStep::wait;
}

DataHeader Sender::data_header(const SenderRun& run, std::uint64_t sequence, std::size_t payload,
                               std::uint8_t flags) const noexcept {
  DataHeader header;
  header.sequence = sequence;
  header.sender = context().tid();
  header.run = run.id;
  header.payload_length = static_cast<std::uint32_t>(payload);
  header.ack_every = static_cast<std::uint32_t>(config_.ack_every);
  const bool with_pattern = config_.pattern && payload > kDataHeaderSize;
  header.flags = static_cast<std::uint8_t>(flags | (with_pattern ? data_flags::pattern : 0));
  return header;
}

void Sender::prepare_data(mem::Ref& frame, const SenderRun& run, std::uint64_t sequence, std::size_t payload,
                          std::uint8_t flags) noexcept {
  const DataHeader header = data_header(run, sequence, payload, flags);
  std::array<std::byte, kDataHeaderSize> encoded;
  encode(header, encoded.data());
  // The head block holds at least the header here (allocate_frame chains only beyond the largest block),
  // but the copy works for any chain.
  copy_to_chain(frame.head(), kFrameHeaderSize, encoded.data(), encoded.size());
  if ((header.flags & data_flags::pattern) != 0)
    fill_pattern(frame.head(), kFrameHeaderSize + kDataHeaderSize, payload - kDataHeaderSize,
                 pattern_seed(header.sender, header.sequence));
}

bool Sender::prepare_parts(std::span<mem::Ref> parts, const SenderRun& run, std::uint64_t sequence,
                           std::size_t payload, std::uint8_t flags) noexcept {
  const DataHeader header = data_header(run, sequence, payload, flags);
  mem::Pool& pool = context().pool();
  auto allocate = [&pool](std::size_t bytes) {
    return bytes <= pool.max_block_size() ? pool.allocate(bytes) : pool.allocate_chain(bytes);
  };
  parts[0] = allocate(kDataHeaderSize);
  if (!parts[0]) return false;
  encode(header, parts[0].data());
  // The pattern's bytes cut as evenly as they go (a part of no bytes where there are fewer bytes than parts).
  const std::size_t pattern_bytes = payload - kDataHeaderSize;
  const std::size_t cuts = parts.size() - 1;
  const std::uint64_t seed = pattern_seed(header.sender, header.sequence);
  std::size_t position = 0;
  for (std::size_t i = 1; i < parts.size(); ++i) {
    const std::size_t bytes = pattern_bytes / cuts + (i - 1 < pattern_bytes % cuts ? 1 : 0);
    if (bytes == 0) continue;
    parts[i] = allocate(bytes);
    if (!parts[i]) {
      for (mem::Ref& part : parts) part.reset();
      return false;
    }
    if ((header.flags & data_flags::pattern) != 0)
      for_each_piece(parts[i].head(), 0, bytes, [position, seed](std::span<std::byte> piece, std::size_t at) {
        fill_pattern(piece, position + at, seed);
      });
    position += bytes;
  }
  return true;
}

void Sender::record_sent(ReceiverProxy& receiver, std::uint64_t sequence, std::size_t payload, bool asked) noexcept {
  receiver.sent.store(sequence, std::memory_order_release);
  receiver.asked_for_ack = asked;
  run_counters_.frames_sent.add_single_writer();
  run_counters_.bytes_sent.add_single_writer(payload);
}

// A failed connection lost the frame (released by send) and probably those in flight: count it, skip that
// receiver from now on and carry on with the others.
void Sender::lose_receiver(const SenderRun& run, ReceiverProxy& receiver) {
  run_counters_.send_errors.add_single_writer();
  receiver.failed = true;
  context().log(LogLevel::warning, concatenate({"the connection to receiver ", to_text(std::uint64_t{receiver.tid}),
                                                " failed: not sending to it any more"}));
  if (std::all_of(run.receivers.begin(), run.receivers.end(), [](const ReceiverProxy& r) { return r.failed; }))
    give_up("the connections to all receivers failed");
}

// fail() goes through the dispatch thread: the executive may answer it with a hook that joins this worker.
void Sender::give_up(const std::string& reason) {
  context().post_task([this, reason] { context().fail(reason); });
}

void Sender::on_ack(Frame&& frame) {
  std::array<std::byte, kAckSize> bytes;
  const bool complete = frame.payload_size() >= kAckSize &&
                        copy_from_chain(frame.data.head(), kFrameHeaderSize, bytes.data(), bytes.size());
  const Tid from = frame.header.initiator;
  frame.data.reset();
  SenderRun* run = run_.load(std::memory_order_acquire);
  if (!complete || run == nullptr) {
    ack_counters_.stale_acks.add();
    return;
  }
  const Ack ack = decode_ack(bytes.data());
  ReceiverProxy* receiver = run->find(from);
  if (ack.run != run->id || receiver == nullptr) {
    ack_counters_.stale_acks.add();
    return;
  }
  if (acks_run_.load(std::memory_order_relaxed) != run->id) {  // the first of this run: restart the counts
    ack_counters_.acks_received.set(0);
    frames_acked_.store(0, std::memory_order_relaxed);
    acks_run_.store(run->id, std::memory_order_release);
  }
  ack_counters_.acks_received.add_single_writer();
  const std::uint64_t before = receiver->acked.load(std::memory_order_relaxed);
  if (ack.highest > before) {
    receiver->acked.store(ack.highest, std::memory_order_release);
    frames_acked_.store(frames_acked_.load(std::memory_order_relaxed) + (ack.highest - before), std::memory_order_relaxed);
  }
  wakeup_.notify();
}

void Sender::report(MetricSink& sink) const {
  const Clock::time_point now = Clock::now();
  const bool acks_current = acks_run_.load(std::memory_order_acquire) == current_run_.load(std::memory_order_acquire);
  const std::uint64_t sent = run_counters_.frames_sent.load();
  const std::uint64_t acked = acks_current ? frames_acked_.load(std::memory_order_relaxed) : 0;
  const Rates rates = send_rate_.read(now);
  const Clock::rep started = started_at_.load(std::memory_order_relaxed);
  const Clock::rep finished = finished_at_.load(std::memory_order_relaxed);
  const Clock::rep end = finished != 0 ? finished : now.time_since_epoch().count();
  const double seconds = started != 0 ? std::chrono::duration<double>(Clock::duration(end - started)).count() : 0;

  run_counters_.report(sink);
  CounterValues acks = ack_counters_.snapshot();
  // acks_received belongs to the previous run until this one's first acknowledgement.
  if (!acks_current) acks.values[ack_counters_.index(ack_counters_.acks_received)] = 0;
  ack_counters_.report_values(sink, acks);
  sink.gauge("outstanding", static_cast<double>(sent > acked ? sent - acked : 0),
             "frames sent and not yet acknowledged");
  sink.derived("send_rate_frames", rates.frames_per_second, "frames per second over the last second");
  sink.derived("send_rate_bytes", rates.bytes_per_second, "payload bytes per second over the last second");
  sink.gauge("run_seconds", seconds, "seconds from the start of sending to its end (or now)");
  sink.gauge("done", done_.load(std::memory_order_acquire) ? 1 : 0,
             "1 when this run has stopped sending and its acknowledgements are in (or given up on)");
}

}  // namespace daqx::nton
