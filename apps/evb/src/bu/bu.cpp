// evb::bu::BU, the application: configure, enable, stop and halt, the ticker, what it publishes, and what it does
// with the EvM's news, the fragments it receives and the slots built and output; the parts it hands them to are
// in the files named for each role (bu.hpp).
#include "bu/bu.hpp"

#include <algorithm>
#include <stdexcept>
#include <string_view>
#include <thread>

#include "daqx/apps/text.hpp"

namespace daqx::evb::bu {
using apps::concatenate;
using apps::to_text;

std::vector<ParamSpec> BU::parameters() { return bu_parameters(); }

BU::BU(ApplicationContext& context) : Application(context), outbox_(context),
      evm_(config_, outbox_, context, slots_),
      output_(
          config_, context, slots_, contributors_,
          [this](std::uint32_t index, std::uint32_t run, std::uint32_t generation) { finish_slot(index, run, generation); },
          [this](const std::string& reason) {
            slots_.stop();
            this->context().fail(reason);
          }),
      stream_(context, slots_, contributors_, [this](std::uint32_t index) { to_output(index); }),
      assembly_(config_, context, slots_, contributors_, evm_, [this](std::uint32_t index) { slot_built(index); }) {
  context.bind_batch(function::fragments, [this](std::span<Frame> frames) { on_fragments(frames); });
  context.bind(function::control, [this](Frame&& f) { on_control(std::move(f)); });
  context.on_send_ready([this] { outbox_.flush(); });
  context.on_pool_available([this] { evm_.request(false); });
}

BU::~BU() {
  ticker_.stop();
  output_.stop();
}

void BU::configure() {
  const BuConfiguration c = read_bu_configuration(context().params());
  // Here rather than at the first event: a directory that cannot take files is a configuration error.
  if (c.output == OutputKind::file) check_output_directory(c.files.directory);
  std::shared_ptr<EventConsumerService> consumer;
  if (c.output == OutputKind::consumer) {
    consumer = find_event_consumer(c.consumer);
    if (!consumer)
      throw std::runtime_error(concatenate({"output consumer: no application of this executive published a consumer named '",
                                            c.consumer, "' (it must come before the BU in the partition)"}));
  }
  run_on_dispatch(context(), [this, c, consumer] {
    config_ = c;
    output_.set_consumer(consumer);
    contributors_.clear();
    contributors_.push_back(config_.evm);
    contributors_.insert(contributors_.end(), config_.rus.begin(), config_.rus.end());
    contributor_index_ = TidIndex(contributors_);
    slots_.configure(config_.slots);
    stream_.configure(std::chrono::round<std::chrono::milliseconds>(
        std::chrono::duration<double>(config_.stream_batch_interval)));
  });
}

void BU::enable() {
  run_on_dispatch(context(), [this] {
    slots_.start();
    evm_.start(new_incarnation());
    abandon_slots();
    assembly_.start();
    slots_.new_run();
    slots_.forget_batch_size();
    run_counters_.reset();
    output_.reset_counts();
    stream_.reset_counts();
    rate_.start(Clock::now(), 0, 0);
    evm_.request(true);
  });
  output_.start(context().run_number());
  ticker_.start(context(), seconds(std::min(kMaxTickPeriod, config_.request_interval / 2)), [this] { tick(); });
}

// Stop: the EvM stops first and drains, so normally nothing is left; wait for the output to finish what it
// holds (bounded), then let go of everything.
void BU::stop() {
  const auto deadline = Clock::now() + std::chrono::seconds(5);
  while (Clock::now() < deadline && gauges_.slots_in_output.load() != 0)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  ticker_.stop();
  output_.stop();
  run_on_dispatch(context(), [this] {
    release_stream();
    slots_.stop();
    abandon_slots();
    outbox_.clear();
    publish();
  });
  // The BU goes to Failed with it.
  if (const std::string failure = output_.take_failure(); !failure.empty()) throw std::runtime_error(failure);
}

void BU::halt() {
  ticker_.stop();
  output_.stop();
  output_.clear_failure();  // logged; halt is how a Failed unit recovers, it does not fail again
  run_on_dispatch(context(), [this] {
    release_stream();
    stream_.halt();
    slots_.stop();
    abandon_slots();
    outbox_.clear();
    publish();
  });
}

void BU::tick() {
  if (!slots_.running()) return;
  const Clock::time_point now = Clock::now();
  if (std::optional<std::string> reason = evm_.check_loss(now)) {
    slots_.stop();
    abandon_slots();
    context().fail(*reason);
    return;
  }
  outbox_.flush();
  evm_.tick(now);
  stream_.tick();
  publish();
}

void BU::publish() {
  const SlotTable::Occupancy occupancy = slots_.occupancy();
  gauges_.credits_outstanding.set(occupancy.offered);
  gauges_.slots_building.set(occupancy.building);
  gauges_.slots_in_output.set(occupancy.in_output);
  gauges_.blocks_held.set(occupancy.blocks_held);
  gauges_.batch_bytes.set(slots_.batch_bytes());
  const Clock::time_point now = Clock::now();
  const EventAssembly::Counts& counts = assembly_.counts();
  rate_.update(now, counts.events_built.load(), counts.bytes_built.load());
  assembly_.summarize_latencies(now);
}

void BU::report(MetricSink& sink) const {
  const apps::Rates rates = rate_.read(Clock::now());
  assembly_.counts().report(sink);
  run_counters_.report(sink);
  gauges_.report(sink);
  evm_.run_counters().report(sink);
  evm_.gauges().report(sink);
  output_.run_counters().report(sink);
  output_.writer_counters().report(sink);
  stream_.report(sink);
  sink.derived("event_rate", rates.frames_per_second, "events built per second over the last second");
  sink.derived("byte_rate", rates.bytes_per_second, "event bytes built per second over the last second");
  sink.state("output_state", evm_.output_state(), {"running", "throttled", "blocked"},
             "the output: running, throttled (fewer slots offered), blocked (none offered)");
  sink.derived("build_latency_median_us", assembly_.latency_median_us(),
             "first block of a batch to event built, median over the last second");
  sink.derived("build_latency_p99_us", assembly_.latency_p99_us(),
             "first block of a batch to event built, 99th percentile over the last second");
  sink.histogram("build_latency_seconds", assembly_.build_latency().snapshot(),
                 "first block of a batch to event built, this run");
  const mem::PoolStats pool = context().pool().stats();
  sink.gauge("pool_blocks_used", static_cast<double>(pool.blocks_used()), "blocks of this unit's pool in use");
}

// Everything held is let go: slots being offered or built (their events are counted abandoned; the EvM counts
// them lost when it dropped us, or they belong to a run that is over). Slots with the output stay its own
// until it gives them back.
void BU::abandon_slots() {
  run_counters_.events_abandoned.add_single_writer(slots_.abandon());
  evm_.drop_discards();
}

void BU::new_run(std::uint32_t run) {
  abandon_slots();
  assembly_.new_run();
  slots_.new_run();
  evm_.new_run(run);
}

void BU::on_control(Frame&& frame) {
  std::optional<Control> c = decode_control(frame.payload(), frame.payload_size_in_head());
  if (!c || frame.header.initiator != config_.evm) {
    gauges_.malformed_frames.add_single_writer();
    return;
  }
  if (!slots_.running()) return;
  evm_.heard(Clock::now());
  if (c->run != evm_.run()) {
    if (c->kind == ControlKind::end_of_run) return;  // the end of an earlier run
    new_run(c->run);
    evm_.request(true);  // with no generation yet: the EvM answers with a reset
  }
  switch (c->kind) {
    case ControlKind::heartbeat:
    case ControlKind::bu_down:
      break;
    case ControlKind::reset:
      // The EvM may repeat a reset while our answer is on its way: the one we already took changes nothing.
      if (c->generation == evm_.generation()) break;
      abandon_slots();
      evm_.take_reset(c->generation);
      break;
    case ControlKind::ru_down: {
      const std::size_t index = contributor_index_.find(c->subject);
      if (index == TidIndex::npos) break;
      assembly_.contributor_down(index);  // events that waited only for it are built
      break;
    }
    case ControlKind::end_of_run:
      evm_.run_ended();
      break;
    case ControlKind::run_failed:
      slots_.stop();
      abandon_slots();
      context().fail(concatenate({"the run failed: ", c->text}));
      break;
  }
}

// The output is done with the slot: give its batch back (if it is still ours to give) and offer it again.
void BU::finish_slot(std::uint32_t index, std::uint32_t run, std::uint32_t generation) {
  if (!slots_.contains(index)) return;
  const BuilderSlot& s = slots_.slot(index);
  if (slots_.running() && run == evm_.run() && generation == evm_.generation() && s.count != 0)
    evm_.give_back({s.first_event, s.count, index, s.incomplete, s.corrupt});
  slots_.finish(index, run == evm_.run());
  if (slots_.running()) evm_.schedule_request();
}

// A batch holds runs of blocks from one contributor (an RU's send of a super-fragment's blocks): the contributor
// is looked up, and the EvM heard, once per run; the assembly publishes its counts once per run. Whether the BU
// runs is looked at once: nothing in a handler stops it (a failed output posts its news).
void BU::on_fragments(std::span<Frame> frames) {
  if (!slots_.running()) return;
  std::uint64_t malformed = 0;
  for (std::size_t first = 0, end = 0; first < frames.size(); first = end) {
    const Tid from = frames[first].header.initiator;
    for (end = first + 1; end < frames.size() && frames[end].header.initiator == from; ++end) {
    }
    const std::size_t contributor = contributor_index_.find(from);
    if (contributor == TidIndex::npos) {
      malformed += end - first;
      continue;
    }
    if (contributor == 0) evm_.heard(Clock::now());
    malformed += assembly_.take_blocks(contributor, frames.subspan(first, end - first));
  }
  if (malformed != 0) gauges_.malformed_frames.add_single_writer(malformed);
}

// Batch sizes are learnt here, from every slot built, whatever the output; the stream offers its events first.
void BU::slot_built(std::uint32_t index) {
  slots_.learn_batch_size(index);
  stream_.take(index);
}

void BU::to_output(std::uint32_t index) {
  if (!output_.take(index)) {  // discarded
    const BuilderSlot& s = slots_.slot(index);
    finish_slot(index, s.run, s.generation);
    return;
  }
  publish();
  evm_.schedule_request();
}

// Their events were built: given back to the EvM as such while the BU still runs, but neither streamed further
// nor output (the output has stopped).
void BU::release_stream() {
  stream_.release([this](std::uint32_t index) {
    const BuilderSlot& s = slots_.slot(index);
    finish_slot(index, s.run, s.generation);
  });
}

}  // namespace daqx::evb::bu
