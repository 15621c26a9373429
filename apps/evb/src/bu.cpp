// evb::BU: assembly and requests on the dispatch thread; file writing on an output worker, which owns a slot
// from the moment it is queued until it posts the slot back (the dispatch thread does not touch it between).
#include "bu.hpp"

#include <algorithm>
#include <stdexcept>
#include <string_view>

#include "daqx/apps/latency.hpp"
#include "daqx/apps/text.hpp"
#include "fragment_logic.hpp"

namespace daqx::evb {
using apps::concatenate;
using apps::choice_param;
using apps::param;
using apps::to_text;

namespace {
constexpr std::uint32_t kMaxProblemsLogged = 20;  // the first integrity problems go to the log; all are counted
}

std::vector<ParamSpec> BU::parameters() {
  const BuConfiguration d;
  return {
      param("evm", ParamType::applications, "class:evb::EvM", "", "the event manager"),
      param("rus", ParamType::applications, "class:evb::RU", "", "the readout units every event needs a fragment from"),
      param("slots", ParamType::unsigned_integer, to_text(std::uint64_t{d.slots}), "",
            "resource slots: each is a credit for one batch of events", 1, 4096),
      choice_param("output", "discard", "where built events go: discard, file or consumer", {"discard", "file", "consumer"}),
      param("outputDirectory", ParamType::string, "/tmp/daqx-evb", "", "directory for output file"),
      param("fileSize", ParamType::unsigned_integer, to_text(std::uint64_t{d.files.max_file_bytes}), "bytes",
            "output files are closed and a new one opened at this size", 1, static_cast<double>(1ull << 50)),
      param("outputBandwidth", ParamType::real, "0", "MB/s", "output file: write at most this fast (0: no limit)", 0),
      param("consumer", ParamType::string, "", "", "output consumer: the name a downstream application published"),
      param("throttleLevel", ParamType::real, to_text(d.throttle_level), "",
            "fraction of slots waiting for the output at which a quarter of the slots are offered", 0.01, 1),
      param("blockLevel", ParamType::real, to_text(d.block_level), "",
            "fraction of slots waiting for the output at which no slot is offered", 0.01, 1),
      param("memoryBudget", ParamType::unsigned_integer, to_text(std::uint64_t{d.memory_budget}), "bytes",
            "received blocks the slots in use may hold; keep below the transport's receive pool", 1 << 20),
      param("checkData", ParamType::boolean, to_text(d.check_data), "",
            "verify each super-fragment's headers, sizes and CRC-32C"),
      param("requestInterval", ParamType::real, to_text(d.request_interval), "s",
            "a request goes at least this often, with or without free slots (liveness)", 0.005, 60),
      param("evmTimeout", ParamType::real, to_text(d.evm_timeout), "s",
            "EvM silence after which this unit fails (the EvM is presumed dead)", 0.05, 3600),
  };
}

BU::BU(ApplicationContext& context) : Application(context), outbox_(context) {
  context.bind(function::fragments, [this](Frame&& f) { on_fragments(std::move(f)); });
  context.bind(function::control, [this](Frame&& f) { on_control(std::move(f)); });
  context.on_send_ready([this] { outbox_.flush(); });
  context.on_pool_available([this] { request(false); });
}

BU::~BU() {
  ticker_.stop();
  stop_output();
}

void BU::configure() {
  const ParamSet& p = context().params();
  BuConfiguration c;
  c.evm = exactly_one(p, "evm");
  c.rus = p.applications("rus");
  c.slots = static_cast<std::uint32_t>(p.unsigned_integer("slots"));
  const std::string& output = p.string("output");
  if (output == "discard") c.output = OutputKind::discard;
  else if (output == "file") c.output = OutputKind::file;
  else if (output == "consumer") c.output = OutputKind::consumer;
  else throw std::runtime_error(concatenate({"output: '", output, "' is none of discard, file, consumer"}));
  c.files.directory = p.string("outputDirectory");
  c.files.max_file_bytes = p.unsigned_integer("fileSize");
  c.files.max_bytes_per_second = p.real("outputBandwidth") * 1e6;
  c.consumer = p.string("consumer");
  c.throttle_level = p.real("throttleLevel");
  c.block_level = p.real("blockLevel");
  c.check_data = p.boolean("checkData");
  c.memory_budget = p.unsigned_integer("memoryBudget");
  c.request_interval = p.real("requestInterval");
  c.evm_timeout = p.real("evmTimeout");
  if (c.block_level < c.throttle_level) throw std::runtime_error("blockLevel is below throttleLevel");
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
    consumer_ = consumer;
    contributors_.clear();
    contributors_.push_back(config_.evm);
    contributors_.insert(contributors_.end(), config_.rus.begin(), config_.rus.end());
    slots_.clear();
    slots_.resize(config_.slots);
  });
}

void BU::enable() {
  run_on_dispatch(context(), [this] {
    running_ = true;
    evm_loss_.reset();
    incarnation_ = new_incarnation();
    run_ = 0;
    generation_ = 0;
    abandon_slots();
    contributor_down_.assign(contributors_.size(), false);
    for (Slot& slot : slots_) slot.finished_first = 0;
    batch_bytes_ = 0;
    for (Counter* c : {&events_built_, &bytes_built_, &events_incomplete_, &events_corrupt_, &events_abandoned_,
                       &fragments_received_, &blocks_received_, &duplicate_pieces_, &stale_blocks_, &protocol_errors_,
                       &requests_sent_, &resets_})
      put(*c, 0);
    output_events_.store(0);
    output_bytes_.store(0);
    build_latency_.reset();
    problems_logged_ = 0;
    rate_.start(Clock::now(), 0, 0);
    request(true);
  });
  if (config_.output == OutputKind::file)
    output_worker_ = context().start_worker("output", [this, run_number = context().run_number()](
                                                          std::stop_token stop) { output_loop(stop, run_number); });
  ticker_.start(context(), seconds(std::min(0.01, config_.request_interval / 2)), [this] { tick(); });
}

// Stop: the EvM stops first and drains, so normally nothing is left; wait for the output to finish what it
// holds (bounded), then let go of everything.
void BU::stop() {
  const auto deadline = Clock::now() + std::chrono::seconds(5);
  while (Clock::now() < deadline && slots_in_output_.load() != 0)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  ticker_.stop();
  stop_output();
  run_on_dispatch(context(), [this] {
    running_ = false;
    abandon_slots();
    outbox_.clear();
    publish();
  });
  std::string failure;
  {
    std::lock_guard lock(output_mutex_);
    failure.swap(output_failure_);
  }
  if (!failure.empty()) throw std::runtime_error(failure);  // the BU goes to Failed with it
}

void BU::halt() {
  ticker_.stop();
  stop_output();
  {
    std::lock_guard lock(output_mutex_);
    output_failure_.clear();  // logged; halt is how a Failed unit recovers, it does not fail again
  }
  run_on_dispatch(context(), [this] {
    running_ = false;
    abandon_slots();
    outbox_.clear();
    publish();
  });
}

int BU::contributor_index(Tid tid) const noexcept {
  for (std::size_t i = 0; i < contributors_.size(); ++i)
    if (contributors_[i] == tid) return static_cast<int>(i);
  return -1;
}

void BU::heard_evm() {
  evm_loss_.heard(Clock::now());
}

// Everything held is let go: slots being offered or built (their events are counted abandoned; the EvM counts
// them lost when it dropped us, or they belong to a run that is over). Slots with the output stay its own
// until it gives them back.
void BU::abandon_slots() {
  for (Slot& s : slots_) {
    if (s.state == Slot::State::output) continue;
    if (s.state == Slot::State::building) bump(events_abandoned_, s.count - s.built);
    s.state = Slot::State::free;
    s.blocks.clear();
    s.count = 0;
  }
  discards_.clear();
}

void BU::new_run(std::uint32_t run) {
  abandon_slots();
  contributor_down_.assign(contributors_.size(), false);  // down in the last run says nothing about this one
  for (Slot& slot : slots_) slot.finished_first = 0;
  run_ = run;
  generation_ = 0;
  evm_loss_.set_run_ended(false);
  put(run_published_, run);
}

void BU::on_control(Frame&& frame) {
  std::optional<Control> c = decode_control(frame.payload(), frame.payload_size_in_head());
  if (!c || frame.header.initiator != config_.evm) {
    bump(malformed_);
    return;
  }
  if (!running_) return;
  heard_evm();
  if (c->run != run_) {
    if (c->kind == ControlKind::end_of_run) return;  // the end of an earlier run
    new_run(c->run);
    request(true);  // with no generation yet: the EvM answers with a reset
  }
  switch (c->kind) {
    case ControlKind::heartbeat:
    case ControlKind::bu_down:
      break;
    case ControlKind::reset:
      // The EvM may repeat a reset while our answer is on its way: the one we already took changes nothing.
      if (c->generation == generation_) break;
      bump(resets_);
      abandon_slots();
      generation_ = c->generation;
      request(true);
      break;
    case ControlKind::ru_down: {
      const int index = contributor_index(c->subject);
      if (index < 0) break;
      contributor_down_[static_cast<std::size_t>(index)] = true;
      // Events that waited only for it are built now, flagged incomplete.
      for (Slot& s : slots_)
        if (s.state == Slot::State::building)
          for (std::uint32_t i = 0; i < s.count && s.state == Slot::State::building; ++i) try_build(s, i);
      break;
    }
    case ControlKind::end_of_run:
      evm_loss_.set_run_ended(true);
      break;
    case ControlKind::run_failed:
      running_ = false;
      abandon_slots();
      context().fail(concatenate({"the run failed: ", c->text}));
      break;
  }
}

void BU::start_building(Slot& s, const BlockHeader& h) {
  s.state = Slot::State::building;
  s.first_event = h.batch_first_event;
  s.count = h.batch_count;
  s.built = 0;
  s.incomplete = 0;
  s.corrupt = 0;
  s.first_data = Clock::now();
  if (s.events.size() < s.count) s.events.resize(s.count);
  for (std::uint32_t i = 0; i < s.count; ++i) {
    EventUnderConstruction& e = s.events[i];
    e.contributions_done = 0;
    e.built = false;
    e.flags = 0;
    e.contributions.resize(contributors_.size());
    for (Contribution& c : e.contributions) {
      c.size = 0;
      c.received = 0;
      c.done = false;
      c.pieces.clear();
    }
  }
}

void BU::on_fragments(Frame&& frame) {
  if (!running_) return;
  const int contributor = contributor_index(frame.header.initiator);
  const std::size_t payload = frame.payload_size();
  if (contributor < 0 || payload != frame.payload_size_in_head() || payload < kBlockHeaderBytes) {
    bump(malformed_);
    return;
  }
  if (contributor == 0) heard_evm();
  ByteReader in(frame.payload(), payload);
  const BlockHeader h = decode_block_header(in);
  if (h.run != run_ || h.generation != generation_ || generation_ == 0) {
    bump(stale_blocks_);  // for a run or generation we left (the EvM dropped or reset us): counted lost there
    return;
  }
  if (h.slot >= slots_.size() || h.batch_count == 0) {
    bump(protocol_errors_);
    return;
  }
  Slot& s = slots_[h.slot];
  if (s.state == Slot::State::offered && h.batch_first_event <= s.finished_first) {
    bump(stale_blocks_);  // a late block of a batch this slot already finished (event ids only grow in a run)
    return;
  }
  if (s.state == Slot::State::offered) {
    start_building(s, h);
  } else if (s.state != Slot::State::building || s.first_event != h.batch_first_event || s.count != h.batch_count) {
    bump(protocol_errors_);  // a batch for a slot we did not offer, or two batches in one slot
    return;
  }
  bump(blocks_received_);
  const auto c = static_cast<std::size_t>(contributor);
  const std::uint32_t slot_index = h.slot;
  s.blocks.push_back(std::move(frame.data));  // the pieces below point into it: held until the slot is done
  for (std::uint32_t p = 0; p < h.piece_count; ++p) {
    const PieceHeader ph = decode_piece_header(in);
    const std::byte* data = in.take(ph.size);
    in.align_to(kPieceAlignment);
    if (!in.ok() || ph.event < s.first_event || ph.event - s.first_event >= s.count) {
      bump(protocol_errors_);
      break;
    }
    const auto index = static_cast<std::uint32_t>(ph.event - s.first_event);
    EventUnderConstruction& e = s.events[index];
    Contribution& part = e.contributions[c];
    if (part.done || e.built) {
      bump(duplicate_pieces_);  // a second super-fragment from this contributor for this event
      continue;
    }
    if (ph.offset != part.received || (part.received != 0 && ph.superfragment_size != part.size) ||
        ph.offset + ph.size > ph.superfragment_size) {
      bump(protocol_errors_);
      continue;
    }
    part.size = ph.superfragment_size;
    part.pieces.emplace_back(data, ph.size);
    part.received += ph.size;
    if (part.received == part.size) {
      part.done = true;
      ++e.contributions_done;
      bump(fragments_received_);
      try_build(s, index);
      if (slots_[slot_index].state != Slot::State::building) break;  // the slot is complete (and maybe reused)
    }
  }
}

// Builds event `index` of the slot if every contributor that is not down has given its super-fragment.
void BU::try_build(Slot& s, std::uint32_t index) {
  EventUnderConstruction& e = s.events[index];
  if (e.built) return;
  std::uint32_t missing_down = 0;
  for (std::size_t c = 0; c < e.contributions.size(); ++c)
    if (!e.contributions[c].done) {
      if (!contributor_down_[c]) return;
      ++missing_down;
    }
  e.built = true;
  std::uint64_t bytes = 0;
  for (std::size_t c = 0; c < e.contributions.size(); ++c) {
    const Contribution& part = e.contributions[c];
    bytes += part.received;
    if (!part.done || !config_.check_data) continue;
    const FragmentCheck check = verify_superfragment(part.pieces, s.first_event + index, contributors_[c], true);
    if (!check.ok) {
      e.flags |= event_flags::corrupt;
      if (problems_logged_++ < kMaxProblemsLogged)
        context().log(LogLevel::error, concatenate({"event ", to_text(s.first_event + index), " from contributor ",
                                                    to_text(std::uint64_t{contributors_[c]}), ": ", check.problem}));
    }
  }
  if (missing_down != 0) e.flags |= event_flags::incomplete;
  if (e.flags & event_flags::incomplete) {
    ++s.incomplete;
    bump(events_incomplete_);
  }
  if (e.flags & event_flags::corrupt) {
    ++s.corrupt;
    bump(events_corrupt_);
  }
  bump(events_built_);
  bump(bytes_built_, bytes);
  const Clock::duration latency = Clock::now() - s.first_data;
  build_latency_.record(std::chrono::duration_cast<std::chrono::nanoseconds>(latency));
  latencies_.push_back(std::chrono::duration<double, std::micro>(latency).count());
  if (++s.built == s.count) slot_built(static_cast<std::uint32_t>(&s - slots_.data()));
}

void BU::slot_built(std::uint32_t index) {
  Slot& s = slots_[index];
  std::uint64_t held = 0;
  for (const mem::Ref& block : s.blocks) held += block.capacity();
  // The largest recent batch, decaying slowly, so one small batch does not open the gates to big ones.
  batch_bytes_ = std::max(held, batch_bytes_ - batch_bytes_ / 64);
  switch (config_.output) {
    case OutputKind::discard:
      finish_slot(index, s.run, s.generation);
      return;
    case OutputKind::file: {
      s.state = Slot::State::output;
      std::lock_guard lock(output_mutex_);
      output_queue_.push_back(index);
      output_changed_.notify_one();
      break;
    }
    case OutputKind::consumer: {
      s.state = Slot::State::output;
      // The slot comes back when the consumer has dropped every event of it (the last `hold`).
      ApplicationContext* ctx = &context();
      const std::uint32_t run = s.run, generation = s.generation;
      std::shared_ptr<const void> hold(nullptr, [this, ctx, index, run, generation](const void*) {
        ctx->post_task([this, index, run, generation] { finish_slot(index, run, generation); });
      });
      for (std::uint32_t i = 0; i < s.count; ++i) {
        const EventUnderConstruction& e = s.events[i];
        BuiltEvent event;
        event.run = s.run;
        event.event = s.first_event + i;
        event.flags = e.flags;
        event.builder = context().tid();
        event.hold = hold;
        for (std::size_t c = 0; c < e.contributions.size(); ++c)
          if (e.contributions[c].done)
            event.fragments.push_back({contributors_[c], e.contributions[c].size, e.contributions[c].pieces});
        consumer_->consume(std::move(event));
      }
      break;
    }
  }
  publish();
  schedule_request();
}

// The output is done with the slot: give its batch back (if it is still ours to give) and offer it again.
void BU::finish_slot(std::uint32_t index, std::uint32_t run, std::uint32_t generation) {
  if (index >= slots_.size()) return;
  Slot& s = slots_[index];
  if (running_ && run == run_ && generation == generation_ && s.count != 0)
    discards_.push_back({s.first_event, s.count, index, s.incomplete, s.corrupt});
  if (run == run_) s.finished_first = std::max(s.finished_first, s.first_event);
  s.state = Slot::State::free;
  s.blocks.clear();
  s.count = 0;
  if (running_) schedule_request();
}

// Slots finished together (one dispatch round) go back in one request.
void BU::schedule_request() {
  if (request_posted_) return;
  request_posted_ = true;
  context().post_task([this] {
    request_posted_ = false;
    request(false);
  });
}

// Offers free slots (as many as the output's backlog allows) and gives back finished batches. A heartbeat
// request goes even with nothing to say.
void BU::request(bool heartbeat) {
  if (!running_) return;
  std::uint32_t busy = 0, in_output = 0;
  for (const Slot& s : slots_) {
    if (s.state == Slot::State::offered || s.state == Slot::State::building) ++busy;
    if (s.state == Slot::State::output) ++in_output;
  }
  const auto total = static_cast<std::uint32_t>(slots_.size());
  std::uint16_t state = output_state::running;
  std::uint32_t limit = total;
  if (in_output >= config_.block_level * total && config_.output != OutputKind::discard) {
    state = output_state::blocked;
    limit = 0;
  } else if (in_output >= config_.throttle_level * total && config_.output != OutputKind::discard) {
    state = output_state::throttled;
    limit = std::max<std::uint32_t>(1, total / 4);
  }
  put(output_state_, state);
  // Memory: a slot holds its blocks until its whole batch is built, so the slots in use must fit the received
  // blocks the transport can lend (else every slot ends part-filled and nothing completes). Until a batch has
  // shown how big batches are, two slots at a time.
  const std::uint32_t memory_limit =
      batch_bytes_ == 0 ? 2
                        : static_cast<std::uint32_t>(std::clamp<std::uint64_t>(config_.memory_budget / batch_bytes_, 1, total));
  limit = std::min(limit, memory_limit);
  put(slot_limit_, limit);
  Request r;
  r.run = run_;
  r.generation = generation_;
  r.incarnation = incarnation_;
  r.state = state;
  r.total_slots = total;
  r.priority = static_cast<std::uint16_t>(255u * (total - std::min(total, busy + in_output)) / total);
  if (generation_ != 0)
    for (std::uint32_t i = 0; i < total && busy + r.free_slots.size() < limit; ++i)
      if (slots_[i].state == Slot::State::free) r.free_slots.push_back(i);
  r.discards = discards_;
  if (!heartbeat && r.free_slots.empty() && r.discards.empty()) return;
  const std::size_t bytes = request_bytes(r);
  mem::Ref frame = context().allocate_frame(bytes);
  if (!frame) return;  // the pool is short: on_pool_available or the next tick tries again
  if (!encode(r, frame.data() + kFrameHeaderSize, bytes)) return;
  frame.resize(kFrameHeaderSize + bytes);
  if (outbox_.send(config_.evm, function::request, run_, std::move(frame), frame_flags::send_now) != SendStatus::ok)
    return;
  for (std::uint32_t i : r.free_slots) {
    slots_[i].state = Slot::State::offered;
    slots_[i].run = run_;
    slots_[i].generation = generation_;
  }
  discards_.clear();
  bump(requests_sent_);
  last_request_ = Clock::now();
}

void BU::tick() {
  if (!running_) return;
  const Clock::time_point now = Clock::now();
  if (std::optional<std::string> reason = evm_loss_.check(now, config_.evm, config_.evm_timeout)) {
    running_ = false;
    abandon_slots();
    context().fail(*reason);
    return;
  }
  outbox_.flush();
  request(now - last_request_ >= seconds(config_.request_interval));
  publish();
}

void BU::publish() {
  std::uint64_t offered = 0, building = 0, in_output = 0, blocks = 0;
  for (const Slot& s : slots_) {
    if (s.state == Slot::State::offered) ++offered;
    if (s.state == Slot::State::building) ++building;
    if (s.state == Slot::State::output) ++in_output;
    if (s.state != Slot::State::output) blocks += s.blocks.size();
  }
  put(slots_offered_, offered);
  put(slots_building_, building);
  put(slots_in_output_, in_output);
  put(blocks_held_, blocks);
  batch_bytes_published_.store(batch_bytes_, std::memory_order_relaxed);
  const Clock::time_point now = Clock::now();
  rate_.update(now, events_built_.load(std::memory_order_relaxed), bytes_built_.load(std::memory_order_relaxed));
  if (now - latency_published_ >= std::chrono::seconds(1) && !latencies_.empty()) {
    const apps::LatencySummary summary = apps::summarize_latencies(latencies_);
    latency_median_us_.store(summary.median, std::memory_order_relaxed);
    latency_p99_us_.store(summary.p99, std::memory_order_relaxed);
    latencies_.clear();
    latency_published_ = now;
  }
  if (latencies_.size() > 100000) latencies_.erase(latencies_.begin(), latencies_.begin() + 50000);
}

// ---- file output ---------------------------------------------------------------------------------------------

void BU::output_loop(std::stop_token stop, std::uint64_t run_number) {
  std::unique_ptr<FileWriter> writer;  // one per run: the run is in the file names
  std::uint32_t writer_run = 0;
  std::vector<EventRecordView::Fragment> fragments;
  std::vector<std::span<const std::byte>> spans;
  bool failed = false;  // after a failure nothing more is written (the BU has failed); slots only go back
  // Closes the current file where only the log is left to tell of a failure to: the run is over for it.
  // Returns the failure, or "".
  const auto close_and_log = [&](std::string_view when) -> std::string {
    if (!writer) return {};
    try {
      writer->close();
      files_closed_.store(writer->stats().files_closed, std::memory_order_relaxed);
    } catch (const std::exception& error) {
      context().log(LogLevel::error, concatenate({"output: closing the file", when, ": ", error.what()}));
      return concatenate({"output: ", error.what()});
    }
    return {};
  };
  for (;;) {
    std::uint32_t index = 0;
    {
      std::unique_lock lock(output_mutex_);
      // stop() waits (bounded) for the backlog before it asks this loop to end; once it asks, what is still
      // queued goes back unwritten (stop_output). Not "once the queue is empty": a BU stopped before its EvM
      // keeps receiving events, and with a slow output the queue would never empty and stop never return.
      if (!output_changed_.wait(lock, stop, [&] { return !output_queue_.empty(); }) || stop.stop_requested()) break;
      index = output_queue_.front();
      output_queue_.pop_front();
    }
    const Slot& s = slots_[index];
    if (!failed) try {
      if (writer && writer_run != s.run) {  // the last run's file: closed here, so an error is reported
        writer->close();
        writer.reset();
      }
      if (!writer) {
        writer = std::make_unique<FileWriter>(config_.files, s.run, context().tid(), run_number);
        writer_run = s.run;
      }
      write_slot(*writer, s, fragments, spans);
      output_events_.store(writer->stats().events, std::memory_order_relaxed);
      output_bytes_.store(writer->stats().bytes, std::memory_order_relaxed);
      files_closed_.store(writer->stats().files_closed, std::memory_order_relaxed);
    } catch (const std::exception& error) {
      failed = true;
      const std::string reason = concatenate({"output: ", error.what()});
      // The file being written is closed before the failure is told, so whoever sees Failed finds the files
      // settled: the last one cut back to its last whole record and closed, or left NAME.open if even that
      // failed (disk full).
      close_and_log(" after the failure");
      writer.reset();
      context().post_task([this, reason] {
        running_ = false;
        context().fail(reason);
      });
    }
    const std::uint32_t run = s.run, generation = s.generation;
    context().post_task([this, index, run, generation] { finish_slot(index, run, generation); });
  }
  // The last file of the run closes here (stop, halt): a failure to (disk full, file removed) is the run's
  // too, so stop() reports it.
  if (std::string failure = close_and_log(""); !failure.empty()) {
    std::lock_guard lock(output_mutex_);
    output_failure_ = std::move(failure);
  }
}

void BU::write_slot(FileWriter& writer, const Slot& s, std::vector<EventRecordView::Fragment>& fragments,
                    std::vector<std::span<const std::byte>>& spans) {
  for (std::uint32_t i = 0; i < s.count; ++i) {
    const EventUnderConstruction& e = s.events[i];
    fragments.clear();
    spans.clear();
    for (const Contribution& part : e.contributions) spans.insert(spans.end(), part.pieces.begin(), part.pieces.end());
    std::size_t at = 0;
    for (std::size_t c = 0; c < e.contributions.size(); ++c) {
      const Contribution& part = e.contributions[c];
      if (!part.done) continue;
      fragments.push_back({contributors_[c], part.size, std::span(spans).subspan(at, part.pieces.size())});
      at += part.pieces.size();
    }
    EventRecordView view;
    view.run = s.run;
    view.event = s.first_event + i;
    view.flags = e.flags;
    view.fragments = fragments;
    writer.write(view);
  }
}

void BU::stop_output() {
  if (!output_worker_.joinable()) return;
  output_worker_.request_stop();
  output_changed_.notify_all();
  output_worker_.join();
  // Slots it never got to come back unwritten (halt, or stop after its wait ran out).
  std::deque<std::uint32_t> left;
  {
    std::lock_guard lock(output_mutex_);
    left.swap(output_queue_);
  }
  for (std::uint32_t index : left) {
    const std::uint32_t run = slots_[index].run, generation = slots_[index].generation;
    context().post_task([this, index, run, generation] { finish_slot(index, run, generation); });
  }
}

void BU::report(MetricSink& sink) const {
  const apps::Rates rates = rate_.read(Clock::now());
  sink.counter("events_built", read(events_built_), "events built (incomplete and corrupt ones included)");
  sink.counter("bytes_built", read(bytes_built_), "bytes of the events built");
  sink.derived("event_rate", rates.frames_per_second, "events built per second over the last second");
  sink.derived("byte_rate", rates.bytes_per_second, "event bytes built per second over the last second");
  sink.counter("events_incomplete", read(events_incomplete_), "events built without a contributor that was down");
  sink.counter("events_corrupt", read(events_corrupt_), "events with a super-fragment that failed the checks");
  sink.counter("events_abandoned", read(events_abandoned_), "events given up unbuilt (reset by the EvM, or run over)");
  sink.counter("fragments_received", read(fragments_received_), "complete super-fragments received");
  sink.counter("blocks_received", read(blocks_received_), "fragment blocks received");
  sink.counter("duplicate_pieces", read(duplicate_pieces_), "pieces of a super-fragment already complete (0 unless sent twice)");
  sink.counter("stale_blocks", read(stale_blocks_), "blocks of another run or generation, dropped");
  sink.counter("protocol_errors", read(protocol_errors_), "blocks or pieces inconsistent with the slot or the batch");
  sink.counter("malformed_frames", read(malformed_), "frames that did not decode or came from an unknown unit");
  sink.counter("requests_sent", read(requests_sent_), "requests sent to the EvM");
  sink.counter("resets", read(resets_), "resets received from the EvM");
  sink.gauge("credits_outstanding", read(slots_offered_), "slots offered to the EvM and not yet assigned");
  sink.gauge("slots_building", read(slots_building_), "slots whose events are being assembled");
  sink.gauge("slots_in_output", read(slots_in_output_), "slots built and waiting for the output");
  sink.gauge("blocks_held", read(blocks_held_), "received blocks held by events under construction");
  sink.gauge("slot_limit", read(slot_limit_), "slots that may be offered or building now (output backlog, memory budget)");
  sink.gauge("batch_bytes", static_cast<double>(batch_bytes_published_.load(std::memory_order_relaxed)),
             "received block bytes a batch holds (largest recent)");
  sink.state("output_state", static_cast<std::size_t>(read(output_state_)), {"running", "throttled", "blocked"},
             "the output: running, throttled (fewer slots offered), blocked (none offered)");
  sink.derived("build_latency_median_us", latency_median_us_.load(std::memory_order_relaxed),
             "first block of a batch to event built, median over the last second");
  sink.derived("build_latency_p99_us", latency_p99_us_.load(std::memory_order_relaxed),
             "first block of a batch to event built, 99th percentile over the last second");
  sink.histogram("build_latency_seconds", build_latency_.snapshot(),
                 "first block of a batch to event built, this run");
  sink.counter("output_events", static_cast<double>(output_events_.load()), "events written to files");
  sink.counter("output_bytes", static_cast<double>(output_bytes_.load()), "bytes written to files");
  sink.counter("files_closed", static_cast<double>(files_closed_.load()), "output files closed (rotated or at stop)");
  sink.gauge("run", read(run_published_), "the EvM's run number as last heard");
  const mem::PoolStats pool = context().pool().stats();
  sink.gauge("pool_blocks_used", static_cast<double>(pool.blocks_used()), "blocks of this unit's pool in use");
}

}  // namespace daqx::evb
