// nton::Receiver: all of its work happens in the data handler on the dispatch thread, so its per-sender
// state needs no synchronisation; report() reads only the atomics the handler publishes.
#include "receiver.hpp"

#include <unistd.h>

#include <array>
#include <fstream>
#include <string>
#include <initializer_list>
#include <stdexcept>
#include <utility>

#include "chain_logic.hpp"
#include "pattern_logic.hpp"
#include "daqx/apps/text.hpp"

namespace daqx::nton {
using namespace daqx::apps;  // parameter helpers, rate meters, latency summaries, wake-ups
namespace {

constexpr std::uint32_t kErrorsLogged = 10;  // per run: enough to diagnose, few enough not to flood the log

}  // namespace

std::vector<ParamSpec> Receiver::parameters() {
  const ReceiverConfiguration d;
  return {
      // Acknowledgements go to whoever sent the frames: naming the senders only plans their connections ahead of
      // the run (the connect command opens them); unnamed, each opens at its first acknowledgement.
      param("senders", ParamType::applications, "", "",
            "the senders it acknowledges to, for the connection plan (empty: connections open at the first "
            "acknowledgement)"),
      param("ackEvery", ParamType::unsigned_integer, to_text(d.ack_every), "frames",
            "acknowledge every this many frames when a frame does not say (senders say)", 1),
      param("verify", ParamType::boolean, to_text(d.verify), "",
            "verify the pattern of every frame that carries one (sequences are always checked)"),
      param("batch", ParamType::boolean, to_text(d.batch), "",
            "take data frames in batches (one handler call for the frames that arrive together) instead of one by one"),
      param("holdFor", ParamType::real, to_text(d.hold_for), "s",
            "a receiver that stops releasing: keeps every frame for this long after the first arrives, then "
            "takes them in order (tests back-pressure; 0: never)", 0.0, 3600.0),
      // What registering gigabytes of memory costs some transports at configure, for tests and benchmarks of how
      // a partition is driven through its transitions.
      param("configureDelay", ParamType::real, to_text(d.configure_delay), "s",
            "configure takes this long before it does anything (a slow configure, emulated)", 0.0, 600.0),
  };
}

Receiver::Receiver(ApplicationContext& context) : Application(context) {
  bind_data(context.params().boolean("batch"));
  context.on_send_ready([this] { send_pending_acks(); });
  context.on_pool_available([this] { send_pending_acks(); });
}

void Receiver::bind_data(bool batches) {
  if (batches) {
    context().bind_batch(function::data, [this](std::span<Frame> frames) {
      note_handler_thread();  // once a batch: a thread-local lookup in a loaded module is a call
      for (Frame& frame : frames) on_data(std::move(frame));
    });
  } else {
    context().bind(function::data, [this](Frame&& frame) {
      note_handler_thread();
      on_data(std::move(frame));
    });
  }
}

void Receiver::on_dispatch_thread(std::function<void()> fn) {
  if (!context().post_task(fn)) fn();
}

void Receiver::configure() {
  ReceiverConfiguration c;
  c.ack_every = context().params().unsigned_integer("ackEvery");
  c.verify = context().params().boolean("verify");
  c.hold_for = context().params().real("holdFor");
  c.batch = context().params().boolean("batch");
  c.configure_delay = context().params().real("configureDelay");
  if (c.ack_every == 0) throw std::runtime_error("ackEvery must be at least 1");
  if (c.configure_delay > 0) std::this_thread::sleep_for(std::chrono::duration<double>(c.configure_delay));
  bind_data(c.batch);  // batch may have been changed while Halted
  // Every application of the partition could send to us: room for all, so no sender allocates on arrival.
  const std::size_t capacity = context().applications().size();
  on_dispatch_thread([this, c, capacity] {
    config_ = c;
    hold_ = c.hold_for > 0 ? Hold::not_started : Hold::over;
    held_.clear();
    senders_.reset(capacity);
    acks_pending_ = false;
    failed_ = false;
    configure_gauges_.reset();
  });
}

void Receiver::enable() {
  // Counters restart with each run; what we know of the senders' sequences stays (it follows their runs).
  on_dispatch_thread([this] {
    run_counters_.reset();
    errors_logged_ = 0;
    receive_rate_.start(Clock::now(), 0, 0);
  });
}

void Receiver::stop() {
  // A run that ends during a hold takes what was held, as the end of the hold would: nothing stays pinned.
  on_dispatch_thread([this] { end_hold(); });
}

void Receiver::halt() {
  // Halted holds nothing: frames still held (no stop ended the hold: halted from Failed, or held before enable)
  // go back to their pools untaken.
  on_dispatch_thread([this] {
    hold_timer_ = std::jthread();
    if (hold_ == Hold::holding) hold_ = Hold::over;
    held_.clear();
  });
}

void Receiver::start_hold() {
  hold_ = Hold::holding;
  const auto until = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(config_.hold_for));
  hold_timer_ = context().start_worker("hold", [this, until](std::stop_token stop) {
    while (!stop.stop_requested() && Clock::now() < until) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    // The held frames are the dispatch thread's: it takes them (retrying while its task queue is full).
    while (!stop.stop_requested() && !context().post_task([this] { end_hold(); }))
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
  });
}

void Receiver::end_hold() {
  if (hold_ != Hold::holding) return;
  hold_ = Hold::over;
  context().log(LogLevel::info, concatenate({"hold over: taking the ", to_text(std::uint64_t{held_.size()}),
                                             " frames kept meanwhile"}));
  while (!held_.empty()) {
    Frame frame = std::move(held_.front());
    held_.pop_front();
    on_data(std::move(frame));
  }
}

void Receiver::note_handler_thread() noexcept {
  // Which thread handles data: the application's dispatch thread, a transport's receive thread or a local
  // sender's worker (inline).
  static thread_local const int this_thread = static_cast<int>(gettid());
  handler_thread_.store(this_thread, std::memory_order_relaxed);
}

void Receiver::on_data(Frame&& frame) {
  if (hold_ != Hold::over) {
    if (hold_ == Hold::not_started) start_hold();
    held_.push_back(std::move(frame));
    if (held_.size() > configure_gauges_.frames_held.load()) configure_gauges_.frames_held.set(held_.size());
    return;
  }
  // A multipart message (a Sender with parts): its parts, linked again, are the bytes an ordinary frame carries
  // after its header, so both are checked alike.
  mem::Ref message;
  std::size_t data_offset = kFrameHeaderSize;
  if ((frame.header.flags & frame_flags::multipart) != 0) {
    const MultipartCheck check = take_parts(frame, parts_);
    if (check != MultipartCheck::ok) {
      note_error(run_counters_.malformed_frames, to_string(check).data(), DataHeader{});
      return;
    }
    message = std::move(parts_.front());
    link_parts(message, std::span(parts_).subspan(1));
    parts_.clear();
    data_offset = 0;
  }
  const mem::Ref& data = message ? message : frame.data;
  const std::size_t payload = message ? message.total_size() : frame.payload_size();
  // The dispatch thread is the only writer: no locked update.
  run_counters_.frames_received.add_single_writer();
  run_counters_.bytes_received.add_single_writer(payload);
  const std::uint64_t frames = run_counters_.frames_received.load();
  const std::uint64_t bytes = run_counters_.bytes_received.load();
  // The clock once per 64 frames is plenty for a per-second rate, and saves a clock read per small frame.
  if ((frames & 63) == 0) receive_rate_.update(Clock::now(), frames, bytes);

  std::array<std::byte, kDataHeaderSize> encoded;
  if (payload < kDataHeaderSize || !copy_from_chain(data.head(), data_offset, encoded.data(), encoded.size())) {
    note_error(run_counters_.malformed_frames, "frame too short for a data header", DataHeader{});
    return;
  }
  const DataHeader header = decode_data_header(encoded.data());
  if (header.version != kProtocolVersion || header.payload_length != payload ||
      header.sender != frame.header.initiator) {
    note_error(run_counters_.malformed_frames, "data header disagrees with the frame (version, length or sender)", header);
    return;
  }
  if (config_.verify && (header.flags & data_flags::pattern) != 0 &&
      !verify_pattern(data.head(), data_offset + kDataHeaderSize, payload - kDataHeaderSize,
                      pattern_seed(header.sender, header.sequence)))
    note_error(run_counters_.pattern_errors, "pattern differs", header);
  frame.data.reset();  // checked: back to its pool before anything else
  message.reset();

  bool added = false;
  SenderState& sender = senders_.find_or_add(header.sender, added);
  if (added) configure_gauges_.senders.set(senders_.size());
  if (sender.sequence.accept(header.run, header.sequence) != SequenceCheck::in_order)
    note_error(run_counters_.sequence_errors, "sequence out of order", header);
  const std::uint64_t ack_every = header.ack_every != 0 ? header.ack_every : config_.ack_every;
  const bool requested = (header.flags & data_flags::ack_request) != 0;
  if (++sender.since_ack >= ack_every || requested) {
    sender.since_ack = 0;
    acknowledge(sender, requested);
  }
}

// Acknowledgements are cumulative (the highest sequence received), so one that cannot go now is simply
// sent later with whatever is highest then.
void Receiver::acknowledge(SenderState& sender, bool urgent) {
  mem::Ref frame = context().allocate_frame(kAckSize);
  SendStatus status = SendStatus::would_block;
  if (frame) {
    std::array<std::byte, kAckSize> encoded;
    const Ack ack{sender.sequence.highest(), sender.sequence.run()};
    encode(ack, encoded.data());
    copy_to_chain(frame.head(), kFrameHeaderSize, encoded.data(), encoded.size());
    // An ack the sender asked for (its window is full: it waits) goes at once; routine ones may be
    // coalesced with others by the transport (one system call for many acks at high frame rates).
    status = context().send(sender.tid, function::ack, ack.highest, frame, urgent ? frame_flags::send_now : std::uint8_t{0});
  }
  sender.ack_pending = false;
  switch (status) {
    case SendStatus::ok:
      run_counters_.acks_sent.add_single_writer();
      break;
    case SendStatus::would_block:  // or no block for it: on_send_ready / on_pool_available send it
      run_counters_.ack_delays.add_single_writer();
      sender.ack_pending = true;
      acks_pending_ = true;
      break;
    case SendStatus::no_route:
      if (!failed_) {
        failed_ = true;
        context().fail(concatenate({"no route to sender ", to_text(std::uint64_t{sender.tid}), " for its acknowledgements"}));
      }
      break;
    case SendStatus::error:
      run_counters_.send_errors.add_single_writer();
      break;
  }
}

void Receiver::send_pending_acks() {
  if (!acks_pending_) return;
  acks_pending_ = false;
  for (SenderState& sender : senders_.all())
    if (sender.ack_pending) acknowledge(sender, true);  // late already: do not let it wait more
}

// The one place the data path builds strings: a bounded number of errors per run, for the log.
void Receiver::note_error(Counter& counter, const char* what, const DataHeader& header) {
  counter.add_single_writer();
  if (errors_logged_ >= kErrorsLogged) return;
  ++errors_logged_;
  context().log(LogLevel::warning,
                concatenate({what, ": sender ", to_text(std::uint64_t{header.sender}), " run ",
                             to_text(std::uint64_t{header.run}), " sequence ", to_text(header.sequence),
                             errors_logged_ == kErrorsLogged ? " (no more errors logged this run)" : ""}));
}

void Receiver::report(MetricSink& sink) const {
  const Rates rates = receive_rate_.read(Clock::now());
  run_counters_.report(sink);
  configure_gauges_.report(sink);
  const int thread = handler_thread_.load(std::memory_order_relaxed);
  if (thread != 0) {
    std::ifstream comm("/proc/self/task/" + std::to_string(thread) + "/comm");
    std::string name;
    std::getline(comm, name);
    sink.derived("handler_thread", thread, "kernel thread id of the thread that handled the last data frame",
               {{"thread", name}});
  }
  sink.derived("receive_rate_frames", rates.frames_per_second, "frames per second over the last second");
  sink.derived("receive_rate_bytes", rates.bytes_per_second, "payload bytes per second over the last second");
}

}  // namespace daqx::nton
