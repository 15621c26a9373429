// nton::PingPong: one frame goes back and forth, driven entirely from the dispatch thread (a round trip is
// one handler call on each side: there is nothing for a worker thread to overlap with).
#include "ping_pong.hpp"

#include <algorithm>
#include <array>
#include <future>
#include <stdexcept>
#include <utility>

#include "chain_logic.hpp"
#include "daqx/nton/protocol.hpp"
#include "daqx/apps/latency.hpp"
#include "daqx/apps/text.hpp"

namespace daqx::nton {
using namespace daqx::apps;  // parameter helpers, rate meters, latency summaries, wake-ups
namespace {

constexpr std::uint64_t kMaxPayload = kDefaultMaxFrameSize - kFrameHeaderSize;
constexpr std::uint64_t kMaxCount = 100'000'000;           // 800 MB of samples
constexpr std::size_t kUnboundedSamples = std::size_t{1} << 20;  // count 0: the last this many are kept
constexpr auto kStopWait = std::chrono::seconds(1);

using apps::to_text;  // the numeric ones, next to the role overload below
std::string to_text(PingPongRole role) { return role == PingPongRole::ping ? "ping" : "pong"; }

// Copies the samples written so far (report while a run goes on, and the final summary).
LatencySummary summarize(const RoundTripSamples& samples) {
  const std::uint64_t taken = samples.taken.load(std::memory_order_acquire);
  const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(taken, samples.values.size()));
  std::vector<double> copy(n);
  for (std::size_t i = 0; i < n; ++i) copy[i] = samples.values[i].load(std::memory_order_relaxed);
  return summarize_latencies(copy);
}

}  // namespace

std::vector<ParamSpec> PingPong::parameters() {
  const PingPongConfiguration d;
  return {
      choice_param("role", to_text(d.role), "ping: measures round trips to its peer; pong: echoes every ping",
                   {"ping", "pong"}),
      param("peer", ParamType::applications, "class:nton::PingPong", "",
            "the ping sends to the first selected application other than itself"),
      param("frameSize", ParamType::unsigned_integer, to_text(d.frame_size), "bytes",
            "payload bytes of a ping, including its 16-byte header (less: the header alone)", 0,
            static_cast<double>(kMaxPayload)),
      param("count", ParamType::unsigned_integer, to_text(d.count), "round trips",
            "round trips measured after the warmup; 0: until stop (the last 2^20 kept)", 0,
            static_cast<double>(kMaxCount)),
      param("warmup", ParamType::unsigned_integer, to_text(d.warmup), "round trips", "round trips before measuring", 0),
  };
}

PingPong::PingPong(ApplicationContext& context) : Application(context) {
  // Every PingPong echoes pings, whatever its role: a ping pointed at another ping still gets answers.
  context.bind(function::ping, [this](Frame&& frame) { on_ping(std::move(frame)); });
  context.bind(function::pong, [this](Frame&& frame) { on_pong(std::move(frame)); });
  context.on_send_ready([this] { retry(); });
  context.on_pool_available([this] {
    if (running_ && waiting_for_pool_) launch();
  });
}

void PingPong::configure() {
  const ParamSet& params = context().params();
  PingPongConfiguration c;
  const std::string& role = params.string("role");
  if (role == "ping")
    c.role = PingPongRole::ping;
  else if (role == "pong")
    c.role = PingPongRole::pong;
  else
    throw std::runtime_error(concatenate({"role must be 'ping' or 'pong', not '", role, "'"}));
  for (Tid tid : params.applications("peer"))
    if (tid != context().tid()) c.peers.push_back(tid);
  c.frame_size = params.unsigned_integer("frameSize");
  c.count = params.unsigned_integer("count");
  c.warmup = params.unsigned_integer("warmup");
  if (c.role == PingPongRole::ping && c.peers.empty())
    throw std::runtime_error(concatenate({"no peer: '", params.text("peer"), "' selects no application but this one"}));

  // Every sample's place is made now, so a round trip never allocates.
  std::shared_ptr<RoundTripSamples> samples;
  if (c.role == PingPongRole::ping)
    samples = std::make_shared<RoundTripSamples>(c.count != 0 ? static_cast<std::size_t>(c.count) : kUnboundedSamples);
  {
    std::lock_guard lock(samples_mutex_);
    samples_ = samples;
  }
  config_ = std::move(c);
  // Each application of the partition could have one ping waiting for an echo: room for all.
  const std::size_t pings = context().applications().size();
  auto reserve = [this, pings] { pending_echoes_.reserve(pings); };
  if (!context().post_task(reserve)) reserve();
}

void PingPong::enable() {
  std::shared_ptr<RoundTripSamples> samples;
  {
    std::lock_guard lock(samples_mutex_);
    samples = samples_;
  }
  auto task = [this, config = config_, samples] { start(config, samples); };
  if (!context().post_task(task)) task();
}

void PingPong::stop() { run_on_dispatch_thread([this] { end_run(); }); }

void PingPong::halt() { run_on_dispatch_thread([this] { end_run(); }); }

void PingPong::run_on_dispatch_thread(std::function<void()> fn) {
  auto ran = std::make_shared<std::promise<void>>();
  std::future<void> finished = ran->get_future();
  if (!context().post_task([fn, ran] {
        fn();
        ran->set_value();
      })) {
    fn();
    return;
  }
  // Bounded: a stuck dispatch thread delays stop() by a second, it never hangs it.
  finished.wait_for(kStopWait);
}

void PingPong::start(const PingPongConfiguration& config, std::shared_ptr<RoundTripSamples> samples) {
  settings_ = config;
  measuring_ = std::move(samples);
  if (measuring_) measuring_->taken.store(0, std::memory_order_relaxed);
  counters_.reset();
  summary_count_.store(0, std::memory_order_relaxed);
  for (auto* value : {&rtt_min_, &rtt_median_, &rtt_p99_, &rtt_max_}) value->store(0, std::memory_order_relaxed);
  round_trip_.reset();
  done_.store(false, std::memory_order_release);
  held_.reset();
  waiting_for_pool_ = false;
  round_ = 1;
  running_ = settings_.role == PingPongRole::ping;
  if (!running_) return;
  target_ = settings_.peers.front();
  launch();
}

// The run's one allocation: the frame that then goes back and forth.
void PingPong::launch() {
  waiting_for_pool_ = false;
  const std::size_t payload = static_cast<std::size_t>(std::max<std::uint64_t>(settings_.frame_size, kPingHeaderSize));
  held_ = context().allocate_frame(payload);
  if (!held_) {
    waiting_for_pool_ = true;  // on_pool_available calls launch() again
    return;
  }
  std::array<std::byte, kPingHeaderSize> encoded;
  encode(PingHeader{round_, static_cast<std::uint32_t>(payload)}, encoded.data());
  copy_to_chain(held_.head(), kFrameHeaderSize, encoded.data(), encoded.size());
  send_ping();
}

void PingPong::send_ping() {
  sent_at_ = Clock::now();
  switch (context().send(target_, function::ping, round_, held_)) {
    case SendStatus::ok:
      break;
    case SendStatus::would_block:  // held_ is still ours: on_send_ready sends it (and restarts the clock)
      counters_.sends_deferred.add_single_writer();
      break;
    case SendStatus::no_route:
      running_ = false;
      held_.reset();
      context().fail(concatenate({"no route to peer ", to_text(std::uint64_t{target_})}));
      break;
    case SendStatus::error:
      running_ = false;
      context().fail(concatenate({"the connection to peer ", to_text(std::uint64_t{target_}), " failed"}));
      break;
  }
}

void PingPong::on_pong(Frame&& frame) {
  const Clock::time_point now = Clock::now();  // first thing: the round trip ends here
  if (!running_ || frame.header.initiator != target_ || frame.header.transaction != round_) {
    counters_.stale_frames.add_single_writer();
    return;
  }
  const double rtt_us = std::chrono::duration<double, std::micro>(now - sent_at_).count();
  counters_.round_trips.add_single_writer();
  if (round_ > settings_.warmup) {
    round_trip_.record(std::chrono::duration_cast<std::chrono::nanoseconds>(now - sent_at_));
    const std::uint64_t index = round_ - settings_.warmup - 1;
    std::vector<std::atomic<double>>& values = measuring_->values;
    values[static_cast<std::size_t>(index % values.size())].store(rtt_us, std::memory_order_relaxed);
    measuring_->taken.store(index + 1, std::memory_order_release);
    if (settings_.count != 0 && index + 1 >= settings_.count) {
      finish();
      return;
    }
  }
  ++round_;
  // The same frame goes out again with the next round number: no allocation per round trip.
  held_ = std::move(frame.data);
  std::array<std::byte, kPingHeaderSize> round;
  detail::store_le<std::uint64_t>(round.data(), round_);
  copy_to_chain(held_.head(), kFrameHeaderSize, round.data(), sizeof(std::uint64_t));
  send_ping();
}

// Zero copy: the received frame itself goes back; send writes the new frame header over the old one.
void PingPong::on_ping(Frame&& frame) { echo(frame.header.initiator, frame.header.transaction, frame.data); }

void PingPong::echo(Tid to, std::uint64_t transaction, mem::Ref& data) {
  switch (context().send(to, function::pong, transaction, data, frame_flags::reply)) {
    case SendStatus::ok:
      counters_.echoes.add_single_writer();
      break;
    case SendStatus::would_block:
      counters_.sends_deferred.add_single_writer();
      // Allocates only if more pings wait at once than there are applications (configure reserved that).
      pending_echoes_.push_back(PendingEcho{to, transaction, std::move(data)});
      break;
    case SendStatus::no_route:
      context().fail(concatenate({"no route back to ping ", to_text(std::uint64_t{to})}));
      break;
    case SendStatus::error:
      break;  // the connection went down with the ping's frame: that ping fails on its side
  }
}

void PingPong::retry() {
  if (running_ && held_) send_ping();
  std::size_t kept = 0;
  for (PendingEcho& pending : pending_echoes_) {
    const SendStatus status = context().send(pending.to, function::pong, pending.transaction, pending.data,
                                             frame_flags::reply);
    if (status == SendStatus::ok) counters_.echoes.add_single_writer();
    if (status == SendStatus::would_block) pending_echoes_[kept++] = std::move(pending);
  }
  pending_echoes_.erase(pending_echoes_.begin() + static_cast<std::ptrdiff_t>(kept), pending_echoes_.end());
}

// Publishes the summary, computed once at the end of the run from a copy (one allocation, after the last
// round trip), and says done.
void PingPong::finish() {
  running_ = false;
  waiting_for_pool_ = false;
  held_.reset();
  if (measuring_) {
    const LatencySummary summary = summarize(*measuring_);
    summary_count_.store(summary.count, std::memory_order_relaxed);
    rtt_min_.store(summary.min, std::memory_order_relaxed);
    rtt_median_.store(summary.median, std::memory_order_relaxed);
    rtt_p99_.store(summary.p99, std::memory_order_relaxed);
    rtt_max_.store(summary.max, std::memory_order_relaxed);
  }
  done_.store(true, std::memory_order_release);
}

// stop() or halt(): a ping still measuring publishes what it has; echoes not yet sent are dropped.
void PingPong::end_run() {
  if (running_) finish();
  held_.reset();
  pending_echoes_.clear();
}

void PingPong::report(MetricSink& sink) const {
  LatencySummary summary;
  if (done_.load(std::memory_order_acquire)) {
    summary.count = static_cast<std::size_t>(summary_count_.load(std::memory_order_relaxed));
    summary.min = rtt_min_.load(std::memory_order_relaxed);
    summary.median = rtt_median_.load(std::memory_order_relaxed);
    summary.p99 = rtt_p99_.load(std::memory_order_relaxed);
    summary.max = rtt_max_.load(std::memory_order_relaxed);
  } else {
    std::shared_ptr<RoundTripSamples> samples;
    {
      std::lock_guard lock(samples_mutex_);
      samples = samples_;
    }
    if (samples) summary = summarize(*samples);  // a copy: the dispatch thread goes on writing
  }
  sink.derived("rtt_min_us", summary.min, "shortest round trip, microseconds");
  sink.derived("rtt_median_us", summary.median, "median round trip, microseconds");
  sink.derived("rtt_p99_us", summary.p99, "99th percentile round trip (nearest rank), microseconds");
  sink.derived("rtt_max_us", summary.max, "longest round trip, microseconds");
  sink.derived("samples", static_cast<double>(summary.count), "round trips measured (after the warmup)");
  sink.histogram("round_trip_seconds", round_trip_.snapshot(), "round trips measured this run (after the warmup)");
  counters_.report(sink);
  sink.gauge("done", done_.load(std::memory_order_acquire) ? 1 : 0,
             "1 when the ping has measured count round trips (or was stopped) and published the summary");
}

}  // namespace daqx::nton
